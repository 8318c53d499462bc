-- Revert taskpool:schedule_ticks from pg

BEGIN;

DROP TABLE schedule_ticks;

COMMIT;
