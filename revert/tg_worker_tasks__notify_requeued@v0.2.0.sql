-- Revert taskpool:tg_worker_tasks__notify_requeued from pg

BEGIN;

DROP TRIGGER _900_notify_requeued ON worker_tasks;
DROP FUNCTION tg_worker_tasks__notify_requeued();

COMMIT;
