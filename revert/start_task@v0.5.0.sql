-- Revert taskpool:start_task from pg

BEGIN;

DROP FUNCTION start_task(bigint, text, integer);

COMMIT;
