-- Revert taskpool:worker_tasks_headers from pg

BEGIN;

DROP FUNCTION _task_headers_problem(jsonb);
ALTER TABLE worker_tasks DROP COLUMN headers;

COMMIT;
