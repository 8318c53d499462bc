-- Revert taskpool:enqueue_task from pg

-- Nothing to undo: deploy/enqueue_task.sql redefined enqueue_task as enqueue_dedupe_windows had left it.

BEGIN;
COMMIT;
