-- Verify taskpool:tg_worker_tasks__notify_requeued on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass AND tgname = '_900_notify_requeued';

ROLLBACK;
