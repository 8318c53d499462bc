-- Revert taskpool:_schedule_next_run_at from pg

BEGIN;

DROP FUNCTION _schedule_next_run_at(task_schedules, timestamptz);

COMMIT;
