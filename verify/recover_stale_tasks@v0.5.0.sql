-- Verify taskpool:recover_stale_tasks on pg

BEGIN;

SELECT has_function_privilege('recover_stale_tasks(integer)', 'execute');

ROLLBACK;
