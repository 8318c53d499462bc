-- Revert taskpool:taskpool_now from pg

BEGIN;

DROP FUNCTION taskpool_now();

COMMIT;
