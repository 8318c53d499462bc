-- Verify taskpool:_schedule_next_run_at on pg

BEGIN;

SELECT 'public._schedule_next_run_at(task_schedules, timestamptz)'::regprocedure;

ROLLBACK;
