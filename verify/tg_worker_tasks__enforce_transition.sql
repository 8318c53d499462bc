-- Verify taskpool:tg_worker_tasks__enforce_transition on pg

BEGIN;

-- One BEFORE trigger, on every INSERT and UPDATE (tgtype 1 row + 2 before + 4 insert + 16 update).
SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass AND tgname = '_500_enforce_transition' AND tgtype = 1 + 2 + 4 + 16
  AND tgattr = '';
-- An active task holds a claim_token; one back in the pool holds none.
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'tg_worker_tasks__enforce_transition'
  AND pg_get_functiondef(oid) LIKE '%NEW.claim_token := NULL;%';
SELECT 1/(COUNT(*) = 0)::integer FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass AND tgname IN ('_100_touch_updated_at', '_300_limit_idle_transaction');

-- The row rules live in the trigger: no CHECK constraint is left on worker_tasks.
SELECT 1/(COUNT(*) = 0)::integer FROM pg_catalog.pg_constraint
WHERE conrelid = 'worker_tasks'::regclass AND contype = 'c';

ROLLBACK;
