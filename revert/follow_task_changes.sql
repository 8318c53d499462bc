-- Revert taskpool:follow_task_changes from pg

BEGIN;

DROP FUNCTION follow_task_changes(text, interval);

COMMIT;
