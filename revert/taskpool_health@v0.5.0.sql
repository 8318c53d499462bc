-- Revert taskpool:taskpool_health from pg

BEGIN;

DROP FUNCTION taskpool_health(interval, interval);

COMMIT;
