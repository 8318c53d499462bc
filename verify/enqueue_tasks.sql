-- Verify taskpool:enqueue_tasks on pg

BEGIN;

SELECT has_function_privilege('enqueue_tasks(jsonb)', 'execute');

ROLLBACK;
