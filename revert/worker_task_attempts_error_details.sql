-- Revert taskpool:worker_task_attempts_error_details from pg

BEGIN;
SET client_min_messages = 'warning';

ALTER TABLE worker_task_attempts DROP COLUMN error_details;

COMMENT ON TABLE worker_task_attempts IS
    'Every attempt that ended without completing: who ran it, when, how it ended and its error. Never updated.';

COMMIT;
