-- Verify taskpool:enable_platform on pg

BEGIN;

SELECT has_function_privilege('enable_platform(text)', 'execute');
SELECT 1/(NOT has_function_privilege('taskpool_worker', 'enable_platform(text)', 'execute'))::integer;

ROLLBACK;
