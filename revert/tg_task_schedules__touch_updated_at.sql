-- Revert taskpool:tg_task_schedules__touch_updated_at from pg

BEGIN;

DROP TRIGGER _100_touch_updated_at ON task_schedules;
DROP FUNCTION tg_task_schedules__touch_updated_at();

COMMIT;
