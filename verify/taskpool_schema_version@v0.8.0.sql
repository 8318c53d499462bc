-- Verify taskpool:taskpool_schema_version on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'taskpool_schema_version()', 'execute');
SELECT 1 / (taskpool_schema_version() = '0.8.0')::integer;

ROLLBACK;
