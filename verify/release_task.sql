-- Verify taskpool:release_task on pg

BEGIN;

SELECT 1/has_function_privilege('taskpool_worker', 'release_task(bigint, text, integer, uuid)', 'execute')::int;
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE oid = 'release_task(bigint, text, integer, uuid)'::regprocedure
  AND pg_get_functiondef(oid) LIKE '%release_task.claim_token%';

ROLLBACK;
