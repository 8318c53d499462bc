-- Revert taskpool:_claim_tasks from pg

BEGIN;

DROP FUNCTION _claim_tasks(text, text, integer, boolean);

COMMIT;
