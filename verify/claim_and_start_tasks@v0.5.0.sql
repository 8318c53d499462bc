-- Verify taskpool:claim_and_start_tasks on pg

BEGIN;

SELECT 1/has_function_privilege('taskpool_worker', 'claim_and_start_tasks(text, text, integer)', 'execute')::integer;

ROLLBACK;
