-- Verify taskpool:worker_tasks_parent_id on pg

BEGIN;

SELECT parent_id FROM worker_tasks WHERE false;
SELECT 1/COUNT(*) FROM pg_catalog.pg_constraint
WHERE conname = 'worker_tasks_parent_id_fkey' AND conrelid = 'worker_tasks'::regclass
  AND confrelid = 'worker_tasks'::regclass AND confdeltype = 'n';
SELECT 'worker_tasks_parent_id_idx'::regclass;

ROLLBACK;
