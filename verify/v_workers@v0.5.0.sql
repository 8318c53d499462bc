-- Verify taskpool:v_workers on pg

BEGIN;

SELECT worker_id, role, host, pid, started_at, last_seen_at, last_seen_age, stale_threshold,
       liveness, task_ids
FROM v_workers
WHERE FALSE;

ROLLBACK;
