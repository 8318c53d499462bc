-- Verify taskpool:complete_task on pg

BEGIN;

SELECT 1/has_function_privilege('taskpool_worker', 'complete_task(bigint, text, integer, uuid, jsonb, jsonb)', 'execute')::int;
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE oid = 'complete_task(bigint, text, integer, uuid, jsonb, jsonb)'::regprocedure
  AND pg_get_functiondef(oid) LIKE '%''follow_ups'', complete_task.task_id)%'
  AND pg_get_functiondef(oid) LIKE '%t.claim_token = complete_task.claim_token%';

ROLLBACK;
