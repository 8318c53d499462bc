-- Revert taskpool:worker_tasks from pg

BEGIN;

DROP TABLE worker_tasks;

COMMIT;
