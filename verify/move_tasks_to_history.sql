-- Verify taskpool:move_tasks_to_history on pg

BEGIN;

SELECT 'move_tasks_to_history(integer)'::regprocedure;

ROLLBACK;
