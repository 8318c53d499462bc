-- Verify taskpool:heartbeat_tasks on pg

BEGIN;

SELECT 1/has_function_privilege('taskpool_worker', 'heartbeat_tasks(text, bigint[], integer[], uuid[])', 'execute')::int;

ROLLBACK;
