-- Revert taskpool:task_schedules from pg

BEGIN;

DROP TABLE task_schedules;

COMMIT;
