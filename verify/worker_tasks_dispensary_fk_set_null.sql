-- Verify taskpool:worker_tasks_dispensary_fk_set_null on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_constraint
WHERE conname = 'worker_tasks_dispensary_id_fkey' AND conrelid = 'worker_tasks'::regclass
  AND confdeltype = 'n';

ROLLBACK;
