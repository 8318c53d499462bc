-- Revert taskpool:task_result_waits from pg

BEGIN;

ALTER TABLE worker_tasks DROP COLUMN waited;
DROP TABLE task_result_waits;

COMMIT;
