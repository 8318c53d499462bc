-- Verify taskpool:unserved_roles on pg

BEGIN;

SELECT role, ready_tasks, oldest_ready_age, last_worker_seen_at FROM unserved_roles() WHERE FALSE;

ROLLBACK;
