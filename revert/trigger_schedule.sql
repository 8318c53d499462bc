-- Revert taskpool:trigger_schedule from pg

BEGIN;

DROP FUNCTION trigger_schedule(text);

COMMIT;
