-- Verify taskpool:complete_tasks on pg

BEGIN;

SELECT 1 / has_function_privilege('taskpool_worker', 'complete_tasks(text, bigint[], integer[], uuid[], jsonb[], jsonb[])', 'execute')::integer;
SELECT 1 / has_function_privilege('taskpool_worker', 'complete_tasks(text, jsonb)', 'execute')::integer;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_proc
WHERE oid = 'complete_tasks(text, jsonb)'::regprocedure AND prosrc LIKE '%RETURN QUERY%SELECT * FROM complete_tasks(%';

ROLLBACK;
