-- Verify taskpool:heartbeat_task on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'heartbeat_task(bigint, text, integer)', 'execute');

ROLLBACK;
