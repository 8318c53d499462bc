-- Verify taskpool:task_schedules_cadence on pg

BEGIN;

SELECT every, cron FROM task_schedules WHERE FALSE;
SELECT 1 / count(*) FROM pg_trigger WHERE tgrelid = 'task_schedules'::regclass AND tgname = '_050_cadence';

ROLLBACK;
