-- Verify taskpool:tg_task_wake_requests__wake_at_commit on pg

BEGIN;

-- The role lock tried before any subtransaction is opened to wait for it.
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'tg_task_wake_requests__wake_at_commit'
  AND pg_get_functiondef(oid) LIKE '%pg_try_advisory_xact_lock_shared(%'
  AND 'lock_timeout=1s' = ANY (proconfig);
SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'task_wake_requests'::regclass AND tgname = 'task_wake_requests_wake_at_commit';

ROLLBACK;
