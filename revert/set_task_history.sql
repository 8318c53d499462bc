-- Revert taskpool:set_task_history from pg

BEGIN;

DROP FUNCTION set_task_history(interval, integer, integer);

COMMIT;
