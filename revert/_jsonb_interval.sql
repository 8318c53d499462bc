-- Revert taskpool:_jsonb_interval from pg

BEGIN;

DROP FUNCTION _jsonb_interval(jsonb);

COMMIT;
