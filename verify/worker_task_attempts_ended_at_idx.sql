-- Verify taskpool:worker_task_attempts_ended_at_idx on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_indexes
WHERE tablename = 'worker_task_attempts' AND indexname = 'worker_task_attempts_ended_at_idx';

ROLLBACK;
