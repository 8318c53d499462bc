-- Revert taskpool:_concurrency_room from pg

BEGIN;

DROP FUNCTION _concurrency_room(text, text);

COMMIT;
