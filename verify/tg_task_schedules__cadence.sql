-- Verify taskpool:tg_task_schedules__cadence on pg

BEGIN;

SELECT 'tg_task_schedules__cadence()'::regprocedure;

ROLLBACK;
