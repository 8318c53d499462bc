-- Revert taskpool:update_schedule from pg

BEGIN;

DROP FUNCTION update_schedule(text, boolean, integer, integer);

COMMIT;
