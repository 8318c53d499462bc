-- Verify taskpool:task_worker_waits_per_role on pg

BEGIN;

SELECT 1/count(*)
FROM pg_catalog.pg_constraint c
WHERE c.conname = 'task_worker_waits_pkey'
  AND c.conrelid = 'task_worker_waits'::regclass
  AND array_length(c.conkey, 1) = 2;

ROLLBACK;
