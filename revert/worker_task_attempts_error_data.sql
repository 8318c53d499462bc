-- Revert taskpool:worker_task_attempts_error_data from pg

BEGIN;
SET client_min_messages = 'warning';

ALTER TABLE worker_task_attempts DROP COLUMN error_data;

COMMIT;
