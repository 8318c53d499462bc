-- Revert taskpool:set_concurrency_limit from pg

BEGIN;

DROP FUNCTION set_concurrency_limit(text, text, integer);

COMMIT;
