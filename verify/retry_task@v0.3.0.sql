-- Verify taskpool:retry_task on pg

BEGIN;

SELECT has_function_privilege('retry_task(bigint)', 'execute');

ROLLBACK;
