-- Revert taskpool:delete_task from pg

BEGIN;

DROP FUNCTION delete_task(bigint);

COMMIT;
