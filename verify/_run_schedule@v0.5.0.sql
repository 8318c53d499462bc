-- Verify taskpool:_run_schedule on pg

BEGIN;

SELECT has_function_privilege('_run_schedule(task_schedules)', 'execute');

ROLLBACK;
