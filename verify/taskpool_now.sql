-- Verify taskpool:taskpool_now on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'taskpool_now()', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'taskpool_now' AND pg_get_functiondef(oid) NOT LIKE '%current_setting%';

ROLLBACK;
