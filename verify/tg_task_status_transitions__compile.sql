-- Verify taskpool:tg_task_status_transitions__compile on pg

BEGIN;

SELECT 'tg_task_status_transitions__compile()'::regprocedure;

ROLLBACK;
