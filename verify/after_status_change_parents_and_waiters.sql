-- Verify taskpool:after_status_change_parents_and_waiters on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass AND tgname = '_600_after_status_change'
  AND pg_get_triggerdef(oid) LIKE '%waited%';
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'tg_worker_tasks__after_status_change'
  AND pg_get_functiondef(oid) LIKE '%task_result_waits%'
  AND pg_get_functiondef(oid) LIKE '%chained'', NEW.id), NEW.id)%';

ROLLBACK;
