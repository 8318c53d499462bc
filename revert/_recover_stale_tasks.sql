-- Revert taskpool:_recover_stale_tasks from pg

-- Nothing to undo: deploy/_recover_stale_tasks.sql redefined _recover_stale_tasks as notify_workers_of_taken_tasks had left it.

BEGIN;
COMMIT;
