-- Revert taskpool:clear_concurrency_limit from pg

BEGIN;

DROP FUNCTION clear_concurrency_limit(text, text);

COMMIT;
