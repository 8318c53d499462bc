-- Verify taskpool:task_schedules_day_plan on pg

BEGIN;

SELECT planner FROM task_schedules WHERE FALSE;
SELECT 1 / count(*) FROM pg_constraint
WHERE conname = 'task_schedules_kind_known' AND pg_get_constraintdef(oid) LIKE '%day_plan%';

ROLLBACK;
