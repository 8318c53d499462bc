-- Verify taskpool:cancel_task on pg

BEGIN;

SELECT has_function_privilege('cancel_task(bigint)', 'execute');

ROLLBACK;
