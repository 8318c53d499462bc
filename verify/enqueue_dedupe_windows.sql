-- Verify taskpool:enqueue_dedupe_windows on pg

BEGIN;

SELECT has_function_privilege('enqueue_task(text, jsonb, integer, integer, timestamptz, text, integer, text, jsonb, interval, interval, interval, boolean)', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE oid = '_enqueue_specs(jsonb, text, bigint)'::regprocedure
  AND pg_get_functiondef(oid) LIKE '%dedupe_window_out_of_range%';

ROLLBACK;
