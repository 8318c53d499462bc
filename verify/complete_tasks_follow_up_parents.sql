-- Verify taskpool:complete_tasks_follow_up_parents on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE oid = 'complete_tasks(text, jsonb)'::regprocedure
  AND pg_get_functiondef(oid) LIKE '%v_chain.task_id)%'
  AND pg_get_functiondef(oid) LIKE '%t.claim_token = e.claim_token%';

ROLLBACK;
