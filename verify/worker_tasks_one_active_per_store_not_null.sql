-- Verify taskpool:worker_tasks_one_active_per_store_not_null on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_index i
WHERE i.indexrelid = 'worker_tasks_one_active_per_dispensary_idx'::regclass AND i.indisunique
  AND pg_get_expr(i.indpred, i.indrelid) LIKE '%dispensary_id IS NOT NULL%';

ROLLBACK;
