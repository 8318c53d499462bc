-- Verify taskpool:tg_worker_tasks__wake_for_freed_store on pg

BEGIN;

SELECT 1/count(*) FROM pg_trigger WHERE tgname = '_900_wake_for_freed_store' AND tgrelid = 'worker_tasks'::regclass;
SELECT 1/count(*) FROM pg_indexes WHERE indexname = 'worker_tasks_pending_by_dispensary_idx';

ROLLBACK;
