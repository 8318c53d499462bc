-- Revert taskpool:task_worker_waits from pg

BEGIN;

DROP TABLE task_worker_waits;

COMMIT;
