-- Verify taskpool:task_workers on pg

BEGIN;

SELECT worker_id, role, host, pid, started_at, last_seen_at FROM task_workers WHERE FALSE;

ROLLBACK;
