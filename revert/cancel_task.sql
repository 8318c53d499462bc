-- Revert taskpool:cancel_task from pg

BEGIN;

DROP FUNCTION cancel_task(bigint);

COMMIT;
