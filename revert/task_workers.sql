-- Revert taskpool:task_workers from pg

BEGIN;

DROP TABLE task_workers;

COMMIT;
