-- Verify taskpool:worker_wake_channel on pg

BEGIN;

SELECT 1/has_function_privilege('taskpool_worker', 'worker_wake_channel(text)', 'execute')::integer;

ROLLBACK;
