-- Verify taskpool:claim_tasks on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'claim_tasks(text, text, integer)', 'execute');

ROLLBACK;
