-- Verify taskpool:complete_tasks on pg

BEGIN;

SELECT 1/has_function_privilege('taskpool_worker', 'complete_tasks(text, jsonb)', 'execute')::integer;

ROLLBACK;
