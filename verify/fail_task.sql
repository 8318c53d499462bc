-- Verify taskpool:fail_task on pg

BEGIN;

SELECT 1/has_function_privilege('taskpool_worker',
    'fail_task(bigint, text, integer, uuid, text, boolean, timestamptz, text, jsonb)', 'execute')::int;
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'fail_task' AND pg_get_functiondef(oid) LIKE '%error_data = fail_task.error_data%'
  AND pg_get_functiondef(oid) LIKE '%fail_task.claim_token%';

ROLLBACK;
