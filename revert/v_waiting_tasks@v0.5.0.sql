-- Revert taskpool:v_waiting_tasks from pg

BEGIN;

DROP VIEW v_waiting_tasks;

COMMIT;
