-- Revert taskpool:retry_task from pg

BEGIN;

DROP FUNCTION retry_task(bigint);

COMMIT;
