-- Revert taskpool:_check_schedule from pg

BEGIN;

DROP FUNCTION _check_schedule(task_schedules);

COMMIT;
