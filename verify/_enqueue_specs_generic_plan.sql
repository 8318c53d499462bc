-- Verify taskpool:_enqueue_specs_generic_plan on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE oid = '_enqueue_specs(jsonb, text)'::regprocedure
  AND 'plan_cache_mode=force_generic_plan' = ANY (proconfig);

ROLLBACK;
