-- Verify taskpool:task_status_transitions on pg

BEGIN;

SELECT from_status, to_status, meaning FROM task_status_transitions WHERE FALSE;

ROLLBACK;
