-- Verify taskpool:heartbeat_worker on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'heartbeat_worker(text)', 'execute');

ROLLBACK;
