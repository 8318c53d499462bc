-- Verify taskpool:tg_worker_tasks__notify_enqueued on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass AND tgname = '_900_notify_enqueued';
-- The wake-ups recorded in one statement, without a call per role.
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'tg_worker_tasks__notify_enqueued'
  AND pg_get_functiondef(oid) LIKE '%INSERT INTO task_wake_requests%'
  AND pg_get_functiondef(oid) NOT LIKE '%_wake_waiting_workers(%';

ROLLBACK;
