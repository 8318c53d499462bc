-- Verify taskpool:tg_worker_tasks__after_status_change on pg

BEGIN;

-- One AFTER ROW UPDATE trigger (tgtype 1 row + 16 update) where there were four.
SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass AND tgname = '_600_after_status_change' AND tgtype = 1 + 16;
SELECT 1/(COUNT(*) = 0)::integer FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass
  AND tgname IN ('_600_record_attempt', '_700_chain_follow_ups', '_900_notify_requeued', '_900_wake_for_freed_store');

ROLLBACK;
