-- Verify taskpool:enqueue_task_headers on pg

BEGIN;

SELECT has_function_privilege('enqueue_task(text, jsonb, integer, integer, timestamptz, text, integer, text, jsonb)', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE oid = 'enqueue_task(text, jsonb, integer, integer, timestamptz, text, integer, text, jsonb)'::regprocedure
  AND pg_get_functiondef(oid) LIKE '%_task_headers_problem(enqueue_task.headers)%';

ROLLBACK;
