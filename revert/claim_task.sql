-- Revert taskpool:claim_task from pg

BEGIN;

DROP FUNCTION claim_task(text, text);

COMMIT;
