-- Verify taskpool:retry_task on pg

BEGIN;

SELECT has_function_privilege('retry_task(bigint)', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'retry_task' AND pg_get_functiondef(oid) LIKE '%worker_tasks_one_active_per_dedupe_key_idx%';

ROLLBACK;
