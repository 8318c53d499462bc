-- Revert taskpool:create_schedule from pg

BEGIN;

DROP FUNCTION create_schedule(text, text, text, interval, text, integer, text, jsonb, text, integer, integer, text, boolean, timestamptz);

COMMIT;
