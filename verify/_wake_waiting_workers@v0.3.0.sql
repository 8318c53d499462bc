-- Verify taskpool:_wake_waiting_workers on pg

BEGIN;

-- Internal: only the triggers (running as the writer of worker_tasks) call it.
SELECT 1/(NOT has_function_privilege('taskpool_worker', '_wake_waiting_workers(text, bigint)', 'execute'))::integer;

ROLLBACK;
