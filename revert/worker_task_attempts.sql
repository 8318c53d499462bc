-- Revert taskpool:worker_task_attempts from pg

BEGIN;

DROP TABLE worker_task_attempts;

COMMIT;
