-- Revert taskpool:_jsonb_bigint from pg

BEGIN;

DROP FUNCTION _jsonb_bigint(jsonb);

COMMIT;
