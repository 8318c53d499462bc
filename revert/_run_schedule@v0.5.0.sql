-- Revert taskpool:_run_schedule from pg

BEGIN;

DROP FUNCTION _run_schedule(task_schedules);

COMMIT;
