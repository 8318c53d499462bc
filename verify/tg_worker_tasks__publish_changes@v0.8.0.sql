-- Verify taskpool:tg_worker_tasks__publish_changes on pg

BEGIN;

SELECT 1/count(*) FROM pg_catalog.pg_proc WHERE oid = 'tg_worker_tasks__publish_changes()'::regprocedure;
SELECT 1/(count(*) = 3)::int
FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass
  AND tgname IN ('_950_publish_enqueued', '_950_publish_changed', '_950_publish_deleted')
  AND tgfoid = 'tg_worker_tasks__publish_changes()'::regprocedure;

ROLLBACK;
