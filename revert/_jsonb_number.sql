-- Revert taskpool:_jsonb_number from pg

BEGIN;

DROP FUNCTION _jsonb_number(jsonb);

COMMIT;
