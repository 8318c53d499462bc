-- Revert taskpool:_task_headers_problem from pg

-- Nothing to undo: deploy/_task_headers_problem.sql redefined _task_headers_problem as worker_tasks_headers had left it.

BEGIN;
COMMIT;
