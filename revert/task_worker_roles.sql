-- Revert taskpool:task_worker_roles from pg

BEGIN;

DROP TABLE task_worker_roles;

COMMIT;
