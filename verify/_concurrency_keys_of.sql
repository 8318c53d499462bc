-- Verify taskpool:_concurrency_keys_of on pg

BEGIN;

SELECT has_function_privilege('_concurrency_keys_of(text, text, jsonb)', 'execute');

ROLLBACK;
