-- Revert taskpool:complete_task from pg

BEGIN;

DROP FUNCTION complete_task(bigint, text, integer, jsonb, jsonb);

COMMIT;
