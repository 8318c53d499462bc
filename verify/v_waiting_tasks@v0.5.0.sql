-- Verify taskpool:v_waiting_tasks on pg

BEGIN;

SELECT id, role, status, dispensary_id, platform, worker_id, attempt, retry_count, max_retries,
       waiting_for, ready_at, error_message
FROM v_waiting_tasks
WHERE FALSE;

ROLLBACK;
