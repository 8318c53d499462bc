-- Verify taskpool:_lock_schedule on pg

BEGIN;

SELECT has_function_privilege('_lock_schedule(text)', 'execute');

ROLLBACK;
