-- Verify taskpool:task_claim_turns on pg

BEGIN;

SELECT role, platform, claimed_at FROM task_claim_turns WHERE false;

ROLLBACK;
