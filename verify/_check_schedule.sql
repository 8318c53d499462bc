-- Verify taskpool:_check_schedule on pg

BEGIN;

SELECT has_function_privilege('_check_schedule(task_schedules)', 'execute');

ROLLBACK;
