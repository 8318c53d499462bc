-- Verify taskpool:tg_task_schedules__touch_updated_at on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'task_schedules'::regclass AND tgname = '_100_touch_updated_at';

ROLLBACK;
