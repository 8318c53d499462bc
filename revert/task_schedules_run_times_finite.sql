-- Revert taskpool:task_schedules_run_times_finite from pg

BEGIN;

-- The rows repaired on deploy keep their finite times.
ALTER TABLE task_schedules DROP CONSTRAINT task_schedules_run_times_finite;

COMMIT;
