-- Revert taskpool:tg_worker_tasks__touch_updated_at from pg

BEGIN;

DROP TRIGGER _100_touch_updated_at ON worker_tasks;
DROP FUNCTION tg_worker_tasks__touch_updated_at();

COMMIT;
