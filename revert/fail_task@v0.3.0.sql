-- Revert taskpool:fail_task from pg

BEGIN;

DROP FUNCTION fail_task(bigint, text, integer, text, boolean, timestamptz);

COMMIT;
