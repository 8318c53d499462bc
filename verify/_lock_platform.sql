-- Verify taskpool:_lock_platform on pg

BEGIN;

SELECT has_function_privilege('_lock_platform(text)', 'execute');

ROLLBACK;
