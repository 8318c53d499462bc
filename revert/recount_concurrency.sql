-- Revert taskpool:recount_concurrency from pg

BEGIN;

DROP FUNCTION recount_concurrency();

COMMIT;
