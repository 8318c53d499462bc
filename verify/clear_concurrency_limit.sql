-- Verify taskpool:clear_concurrency_limit on pg

BEGIN;

SELECT has_function_privilege('clear_concurrency_limit(text, text)', 'execute');

ROLLBACK;
