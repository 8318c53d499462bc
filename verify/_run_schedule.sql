-- Verify taskpool:_run_schedule on pg

BEGIN;

SELECT has_function_privilege('_run_schedule(task_schedules)', 'execute');

SELECT 1 / count(*) FROM pg_proc WHERE proname = '_run_schedule' AND prosrc LIKE '%day_plan%';

ROLLBACK;
