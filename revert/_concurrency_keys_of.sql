-- Revert taskpool:_concurrency_keys_of from pg

BEGIN;

DROP FUNCTION _concurrency_keys_of(text, text, jsonb);

COMMIT;
