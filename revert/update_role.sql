-- Revert taskpool:update_role from pg

BEGIN;

DROP FUNCTION update_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean);

COMMIT;
