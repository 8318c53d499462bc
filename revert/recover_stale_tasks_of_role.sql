-- Revert taskpool:recover_stale_tasks_of_role from pg

BEGIN;

DROP FUNCTION recover_stale_tasks_of_role(text);

COMMIT;
