-- Revert taskpool:set_retention_policy from pg

BEGIN;

DROP FUNCTION set_retention_policy(text, interval, boolean, integer, text[]);

COMMIT;
