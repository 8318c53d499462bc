-- Verify taskpool:recount_concurrency on pg

BEGIN;

SELECT has_function_privilege('recount_concurrency()', 'execute');

ROLLBACK;
