-- Verify taskpool:_check_platform on pg

BEGIN;

SELECT has_function_privilege('_check_platform(text)', 'execute');

ROLLBACK;
