-- Verify taskpool:fail_task on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'fail_task(bigint, text, integer, text, boolean, timestamptz)', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'fail_task' AND pg_get_functiondef(oid) LIKE '%isfinite(fail_task.retry_at)%';

ROLLBACK;
