-- Verify taskpool:taskpool_now on pg

BEGIN;

SELECT has_function_privilege('taskpool_now()', 'execute');

ROLLBACK;
