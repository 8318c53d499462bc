-- Revert taskpool:diff_role from pg

BEGIN;

DROP FUNCTION diff_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean);

COMMIT;
