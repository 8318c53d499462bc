-- Revert taskpool:move_tasks_to_history from pg

BEGIN;

DROP FUNCTION move_tasks_to_history(integer);

COMMIT;
