-- Revert taskpool:heartbeat_task from pg

BEGIN;

DROP FUNCTION heartbeat_task(bigint, text, integer);

COMMIT;
