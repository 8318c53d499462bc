-- Revert taskpool:claim_token from pg

BEGIN;

ALTER TABLE worker_task_attempts DROP COLUMN claim_token;
ALTER TABLE worker_tasks DROP COLUMN claim_token;

COMMIT;
