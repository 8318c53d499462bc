-- Verify taskpool:claim_and_start_tasks on pg

BEGIN;

SELECT 1/has_function_privilege('taskpool_worker', 'claim_and_start_tasks(text, text, integer)', 'execute')::integer;
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang
WHERE p.oid = 'claim_and_start_tasks(text, text, integer)'::regprocedure AND l.lanname = 'plpgsql';

ROLLBACK;
