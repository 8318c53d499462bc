-- Verify taskpool:task_worker_roles on pg

BEGIN;

SELECT worker_id, role FROM task_worker_roles WHERE false;

ROLLBACK;
