-- Revert taskpool:add_store from pg

BEGIN;

DROP FUNCTION add_store(text, text, text, text, text);

COMMIT;
