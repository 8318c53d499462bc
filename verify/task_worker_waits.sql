-- Verify taskpool:task_worker_waits on pg

BEGIN;

SELECT worker_id, role, waiting_since FROM task_worker_waits WHERE false;

ROLLBACK;
