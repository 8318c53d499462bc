-- Verify taskpool:get_dispensary on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'get_dispensary(integer)', 'execute');

ROLLBACK;
