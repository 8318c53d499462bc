-- Revert taskpool:tick_schedules from pg

BEGIN;

DROP FUNCTION tick_schedules();

COMMIT;
