-- Revert taskpool:tg_task_schedules__cadence from pg

-- Nothing to undo: deploy/tg_task_schedules__cadence.sql redefined tg_task_schedules__cadence as task_schedules_cadence had left it.

BEGIN;
COMMIT;
