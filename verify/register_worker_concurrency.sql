-- Verify taskpool:register_worker_concurrency on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'register_worker(text, text[], text, integer, integer)', 'execute');

ROLLBACK;
