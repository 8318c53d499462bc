-- Verify taskpool:_concurrency_limit_problem on pg

BEGIN;

SELECT has_function_privilege('_concurrency_limit_problem(text, text)', 'execute');

ROLLBACK;
