-- Verify taskpool:_schedule_next_run_at on pg

BEGIN;

SELECT 'public._schedule_next_run_at(task_schedules, timestamptz)'::regprocedure;

SELECT 1 / count(*) FROM pg_proc WHERE proname = '_schedule_next_run_at' AND prosrc LIKE '%day_plan%';

ROLLBACK;
