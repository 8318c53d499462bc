-- Verify taskpool:v_stuck_tasks on pg

BEGIN;

SELECT id, role, dispensary_id, status, worker_id, attempt, claimed_at, last_heartbeat_at,
       silent_for, stale_threshold
FROM v_stuck_tasks
WHERE FALSE;

ROLLBACK;
