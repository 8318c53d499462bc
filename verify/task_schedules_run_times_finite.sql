-- Verify taskpool:task_schedules_run_times_finite on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_constraint
WHERE conrelid = 'task_schedules'::regclass AND conname = 'task_schedules_run_times_finite' AND convalidated;

ROLLBACK;
