-- Verify taskpool:deregister_worker on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'deregister_worker(text)', 'execute');

ROLLBACK;
