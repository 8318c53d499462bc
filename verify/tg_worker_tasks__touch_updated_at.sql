-- Verify taskpool:tg_worker_tasks__touch_updated_at on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass AND tgname = '_100_touch_updated_at';

ROLLBACK;
