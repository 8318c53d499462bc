-- Verify taskpool:register_worker on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'register_worker(text, text, text, integer)', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'register_worker' AND prorettype = 'worker_registration'::regtype;

ROLLBACK;
