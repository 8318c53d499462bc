-- Verify taskpool:v_task_counts on pg

BEGIN;

SELECT role, status, tasks FROM v_task_counts WHERE FALSE;

ROLLBACK;
