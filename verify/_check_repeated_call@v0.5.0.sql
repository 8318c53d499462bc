-- Verify taskpool:_check_repeated_call on pg

BEGIN;

SELECT has_function_privilege('_check_repeated_call(bigint, text, integer, text)', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = '_check_repeated_call' AND pg_get_functiondef(oid) LIKE '%worker_task_attempts%';

ROLLBACK;
