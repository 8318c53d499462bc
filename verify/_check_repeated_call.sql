-- Verify taskpool:_check_repeated_call on pg

BEGIN;

SELECT '_check_repeated_call(bigint, text, integer, uuid, text)'::regprocedure;
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE oid = '_check_repeated_call(bigint, text, integer, uuid, text)'::regprocedure
  AND pg_get_functiondef(oid) LIKE '%a.claim_token = _check_repeated_call.claim_token%';

ROLLBACK;
