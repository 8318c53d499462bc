-- Revert taskpool:resume_role from pg

BEGIN;

DROP FUNCTION resume_role(text);

COMMIT;
