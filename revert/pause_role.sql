-- Revert taskpool:pause_role from pg

BEGIN;

DROP FUNCTION pause_role(text, text);

COMMIT;
