-- Verify taskpool:_lock_owned_task on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE oid = '_lock_owned_task(bigint, text, integer, uuid)'::regprocedure
  AND pg_get_functiondef(oid) LIKE '%t.claim_token = _lock_owned_task.claim_token%';

ROLLBACK;
