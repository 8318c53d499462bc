-- Verify taskpool:_claim_tasks on pg

BEGIN;

-- Internal: only the SECURITY DEFINER claim functions may call it.
SELECT 1/(NOT has_function_privilege('taskpool_worker', '_claim_tasks(text, text, integer, boolean)', 'execute'))::integer;
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = '_claim_tasks' AND pg_get_functiondef(oid) LIKE '%c_last_attempt%';

ROLLBACK;
