-- Revert taskpool:task_role_chains from pg

BEGIN;

DROP TABLE task_role_chains;

COMMIT;
