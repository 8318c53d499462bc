-- Revert taskpool:tg_worker_tasks__wake_for_freed_store from pg

BEGIN;

DROP TRIGGER _900_wake_for_freed_store ON worker_tasks;
DROP FUNCTION tg_worker_tasks__wake_for_freed_store();
DROP INDEX worker_tasks_pending_by_dispensary_idx;

COMMIT;
