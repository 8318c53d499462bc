-- Verify taskpool:task_wake_requests on pg

BEGIN;

SELECT backend_pid, role, ready, marking FROM task_wake_requests WHERE false;
SELECT 1/(SELECT count(*) FROM pg_trigger
          WHERE tgname = 'task_wake_requests_wake_at_commit' AND tgdeferrable AND tginitdeferred)::integer;
-- Internal: only the commit-time trigger runs it.
SELECT 1/(NOT has_function_privilege('taskpool_worker', 'tg_task_wake_requests__wake_at_commit()', 'execute'))::integer;

ROLLBACK;
