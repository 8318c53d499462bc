-- Revert taskpool:tg_worker_tasks__after_status_change from pg

-- Nothing to undo: deploy/tg_worker_tasks__after_status_change.sql redefined tg_worker_tasks__after_status_change as after_status_change_parents_and_waiters had left it.

BEGIN;
COMMIT;
