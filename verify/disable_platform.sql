-- Verify taskpool:disable_platform on pg

BEGIN;

SELECT has_function_privilege('disable_platform(text, text)', 'execute');
SELECT 1/(NOT has_function_privilege('taskpool_worker', 'disable_platform(text, text)', 'execute'))::integer;

ROLLBACK;
