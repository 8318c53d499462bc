-- Verify taskpool:notify_workers_of_taken_tasks on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass AND tgname = '_900_notify_cancel_requested';

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = '_recover_stale_tasks' AND pg_get_functiondef(oid) LIKE '%pg_notify%';

ROLLBACK;
