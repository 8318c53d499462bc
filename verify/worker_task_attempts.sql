-- Verify taskpool:worker_task_attempts on pg

BEGIN;

SELECT task_id, attempt, worker_id, claimed_at, started_at, last_heartbeat_at, ended_at,
       outcome, error_message
FROM worker_task_attempts
WHERE FALSE;

ROLLBACK;
