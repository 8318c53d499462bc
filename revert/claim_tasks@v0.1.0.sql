-- Revert taskpool:claim_tasks from pg

BEGIN;

DROP FUNCTION claim_tasks(text, text, integer);

COMMIT;
