-- Verify taskpool:complete_task on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'complete_task(bigint, text, integer, jsonb, jsonb)', 'execute');

ROLLBACK;
