-- Revert taskpool:unfollow_task_changes from pg

BEGIN;

DROP FUNCTION unfollow_task_changes(text);

COMMIT;
