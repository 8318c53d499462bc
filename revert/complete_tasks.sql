-- Revert taskpool:complete_tasks from pg

-- Nothing to undo: deploy/complete_tasks.sql redefined complete_tasks as complete_tasks_follow_up_parents had left it.

BEGIN;
COMMIT;
