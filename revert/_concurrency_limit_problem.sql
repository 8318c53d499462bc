-- Revert taskpool:_concurrency_limit_problem from pg

BEGIN;

DROP FUNCTION _concurrency_limit_problem(text, text);

COMMIT;
