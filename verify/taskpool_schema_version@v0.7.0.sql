-- Verify taskpool:taskpool_schema_version on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'taskpool_schema_version()', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'taskpool_schema_version' AND pg_get_functiondef(oid) LIKE '%''0.6.0''%';

ROLLBACK;
