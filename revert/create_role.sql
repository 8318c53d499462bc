-- Revert taskpool:create_role from pg

BEGIN;

DROP FUNCTION create_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean);

COMMIT;
