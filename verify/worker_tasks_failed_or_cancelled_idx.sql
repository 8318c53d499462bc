-- Verify taskpool:worker_tasks_failed_or_cancelled_idx on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_indexes
WHERE tablename = 'worker_tasks' AND indexname = 'worker_tasks_failed_or_cancelled_idx';

ROLLBACK;
