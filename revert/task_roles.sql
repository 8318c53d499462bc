-- Revert taskpool:task_roles from pg

BEGIN;

DROP TABLE task_roles;

COMMIT;
