-- Revert taskpool:v_task_counts from pg

BEGIN;

DROP VIEW v_task_counts;

COMMIT;
