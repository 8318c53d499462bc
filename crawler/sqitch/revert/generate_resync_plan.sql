-- Revert taskpool:generate_resync_plan from pg

BEGIN;

DROP FUNCTION generate_resync_plan(integer, date, text, integer);

COMMIT;
