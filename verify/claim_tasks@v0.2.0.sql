-- Verify taskpool:claim_tasks on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'claim_tasks(text, text, integer)', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'claim_tasks' AND pg_get_functiondef(oid) LIKE '%platform_governance%';

ROLLBACK;
