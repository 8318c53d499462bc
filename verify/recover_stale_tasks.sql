-- Verify taskpool:recover_stale_tasks on pg

BEGIN;

SELECT has_function_privilege('recover_stale_tasks(integer)', 'execute');

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = '_recover_stale_tasks' AND pg_get_functiondef(oid) LIKE '%stale_recovered%';

ROLLBACK;
