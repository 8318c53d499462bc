-- Verify taskpool:dispensaries on pg

BEGIN;

SELECT id, name, platform, state_code, active, created_at, updated_at
FROM dispensaries
WHERE FALSE;

ROLLBACK;
