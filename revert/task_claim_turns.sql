-- Revert taskpool:task_claim_turns from pg

BEGIN;

DROP TABLE task_claim_turns;

COMMIT;
