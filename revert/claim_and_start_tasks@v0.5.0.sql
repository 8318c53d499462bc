-- Revert taskpool:claim_and_start_tasks from pg

BEGIN;

DROP FUNCTION claim_and_start_tasks(text, text, integer);

COMMIT;
