-- Revert taskpool:task_workers_concurrency from pg

BEGIN;
SET client_min_messages = 'warning';

ALTER TABLE task_workers DROP COLUMN concurrency;

COMMIT;
