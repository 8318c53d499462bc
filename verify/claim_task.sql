-- Verify taskpool:claim_task on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'claim_task(text, text)', 'execute');

ROLLBACK;
