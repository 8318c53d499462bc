-- Verify taskpool:enqueue_task_own_backoff on pg

BEGIN;

SELECT has_function_privilege('enqueue_task(text, jsonb, integer, integer, timestamptz, text, integer, text, jsonb, interval, interval)', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE oid = 'enqueue_task(text, jsonb, integer, integer, timestamptz, text, integer, text, jsonb, interval, interval)'::regprocedure
  AND pg_get_functiondef(oid) LIKE '%enqueue_task.backoff_base, enqueue_task.backoff_cap%';

ROLLBACK;
