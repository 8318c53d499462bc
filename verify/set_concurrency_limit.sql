-- Verify taskpool:set_concurrency_limit on pg

BEGIN;

SELECT has_function_privilege('set_concurrency_limit(text, text, integer)', 'execute');

ROLLBACK;
