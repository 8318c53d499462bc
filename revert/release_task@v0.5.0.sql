-- Revert taskpool:release_task from pg

BEGIN;

DROP FUNCTION release_task(bigint, text, integer);

COMMIT;
