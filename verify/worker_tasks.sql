-- Verify taskpool:worker_tasks on pg

BEGIN;

SELECT id, role, dispensary_id, platform, status, priority, scheduled_for, payload, dedupe_key,
       worker_id, attempt, claimed_at, started_at, last_heartbeat_at, cancel_requested_at,
       completed_at, result, error_message, retry_count, max_retries, created_at, updated_at
FROM worker_tasks
WHERE FALSE;

SELECT 1/COUNT(*) FROM pg_catalog.pg_indexes
WHERE tablename = 'worker_tasks' AND indexname = 'worker_tasks_one_active_per_dispensary_idx';

ROLLBACK;
