-- Verify taskpool:snooze_task on pg

BEGIN;

SELECT 1/has_function_privilege('taskpool_worker', 'snooze_task(bigint, text, integer, uuid, timestamptz)', 'execute')::int;
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE oid = 'snooze_task(bigint, text, integer, uuid, timestamptz)'::regprocedure
  AND pg_get_functiondef(oid) LIKE '%snooze_task.claim_token%';

ROLLBACK;
