-- Revert taskpool:_enqueue_specs_generic_plan from pg

BEGIN;

ALTER FUNCTION _enqueue_specs(jsonb, text) RESET plan_cache_mode;

COMMIT;
