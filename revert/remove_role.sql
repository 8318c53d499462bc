-- Revert taskpool:remove_role from pg

BEGIN;

DROP FUNCTION remove_role(text, boolean);

COMMIT;
