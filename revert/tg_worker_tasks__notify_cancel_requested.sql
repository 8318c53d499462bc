-- Revert taskpool:tg_worker_tasks__notify_cancel_requested from pg

-- Nothing to undo: deploy/tg_worker_tasks__notify_cancel_requested.sql redefined tg_worker_tasks__notify_cancel_requested as notify_workers_of_taken_tasks had left it.

BEGIN;
COMMIT;
