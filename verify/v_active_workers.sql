-- Verify taskpool:v_active_workers on pg

BEGIN;

SELECT worker_id, role, host, pid, started_at, last_seen_at, task_id, task_status, dispensary_id
FROM v_active_workers
WHERE FALSE;

ROLLBACK;
