-- Verify taskpool:heartbeat_tasks on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'heartbeat_tasks(text, bigint[], integer[])', 'execute');

ROLLBACK;
