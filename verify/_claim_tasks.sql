-- Verify taskpool:_claim_tasks on pg

BEGIN;

-- Internal: only the SECURITY DEFINER claim functions may call it.
SELECT 1/(NOT has_function_privilege('taskpool_worker', '_claim_tasks(text, text, integer, boolean)', 'execute'))::integer;
-- The lean claim: a cached generic plan, no BEGIN ... EXCEPTION block (no subtransaction).
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = '_claim_tasks' AND pg_get_functiondef(oid) LIKE '%c_last_attempt%'
  AND 'plan_cache_mode=force_generic_plan' = ANY (proconfig)
  AND pg_get_functiondef(oid) NOT LIKE '%EXCEPTION WHEN%'
  -- a paused role and a disabled platform hand out nothing
  AND pg_get_functiondef(oid) LIKE '%paused_at IS NOT NULL%'
  AND pg_get_functiondef(oid) LIKE '%NOT g.enabled%'
  -- every claim gets a new claim_token
  AND pg_get_functiondef(oid) LIKE '%claim_token = gen_random_uuid()%'
  -- tokens taken at the claim, and turns between platforms
  AND pg_get_functiondef(oid) LIKE '%claims_platform_token%'
  AND pg_get_functiondef(oid) LIKE '%task_claim_turns%';

ROLLBACK;
