-- Verify taskpool:tg_worker_tasks__limit_idle_transaction on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass AND tgname = '_300_limit_idle_transaction'
  AND tgfoid = 'tg_worker_tasks__limit_idle_transaction()'::regprocedure;

ROLLBACK;
