-- Revert taskpool:recover_stale_tasks from pg

BEGIN;

DROP FUNCTION recover_stale_tasks(integer);

COMMIT;
