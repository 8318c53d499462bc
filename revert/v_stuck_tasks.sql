-- Revert taskpool:v_stuck_tasks from pg

BEGIN;

DROP VIEW v_stuck_tasks;

COMMIT;
