-- Verify taskpool:set_task_history on pg

BEGIN;

SELECT 'set_task_history(interval, integer, integer)'::regprocedure;

ROLLBACK;
