-- Revert taskpool:_tasks_filtered from pg

-- Nothing to undo: deploy/_tasks_filtered.sql redefined _tasks_filtered as tasks_matching had left it.

BEGIN;
COMMIT;
