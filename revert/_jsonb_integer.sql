-- Revert taskpool:_jsonb_integer from pg

BEGIN;

DROP FUNCTION _jsonb_integer(jsonb);

COMMIT;
