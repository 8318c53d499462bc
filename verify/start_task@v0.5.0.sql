-- Verify taskpool:start_task on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'start_task(bigint, text, integer)', 'execute');

ROLLBACK;
