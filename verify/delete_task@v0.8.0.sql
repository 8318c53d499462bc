-- Verify taskpool:delete_task on pg

BEGIN;

SELECT has_function_privilege('delete_task(bigint)', 'execute');

ROLLBACK;
