-- Verify taskpool:_enqueue_specs on pg

BEGIN;

SELECT has_function_privilege('_enqueue_specs(jsonb, text, bigint)', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE oid = '_enqueue_specs(jsonb, text, bigint)'::regprocedure
  AND pg_get_functiondef(oid) LIKE '%headers_invalid%';

ROLLBACK;
