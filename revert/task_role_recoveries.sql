-- Revert taskpool:task_role_recoveries from pg

BEGIN;

DROP TABLE task_role_recoveries;

COMMIT;
