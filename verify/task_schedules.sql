-- Verify taskpool:task_schedules on pg

BEGIN;

SELECT id, name, role, kind, enabled, interval_hours, priority, state_code, payload, batches,
       time_zone, last_run_at, next_run_at, last_task_count, last_error, created_at, updated_at
FROM task_schedules
WHERE FALSE;

ROLLBACK;
