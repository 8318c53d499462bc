-- Verify taskpool:_lock_owned_task on pg

BEGIN;

SELECT has_function_privilege('_lock_owned_task(bigint, text, integer)', 'execute');

ROLLBACK;
