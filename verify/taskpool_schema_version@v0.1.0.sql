-- Verify taskpool:taskpool_schema_version on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'taskpool_schema_version()', 'execute');

ROLLBACK;
