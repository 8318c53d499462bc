-- Revert taskpool:tg_worker_tasks__notify_enqueued from pg

BEGIN;

DROP TRIGGER _900_notify_enqueued ON worker_tasks;
DROP FUNCTION tg_worker_tasks__notify_enqueued();

COMMIT;
