-- Revert taskpool:_jsonb_timestamptz from pg

BEGIN;

DROP FUNCTION _jsonb_timestamptz(jsonb);

COMMIT;
