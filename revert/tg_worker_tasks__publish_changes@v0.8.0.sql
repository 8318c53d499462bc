-- Revert taskpool:tg_worker_tasks__publish_changes from pg

BEGIN;

DROP TRIGGER _950_publish_deleted ON worker_tasks;
DROP TRIGGER _950_publish_changed ON worker_tasks;
DROP TRIGGER _950_publish_enqueued ON worker_tasks;
DROP FUNCTION tg_worker_tasks__publish_changes();

COMMIT;
