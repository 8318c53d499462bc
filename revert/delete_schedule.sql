-- Revert taskpool:delete_schedule from pg

BEGIN;

DROP FUNCTION delete_schedule(text);

COMMIT;
