-- Verify taskpool:_jsonb_bigint on pg

BEGIN;

SELECT has_function_privilege('_jsonb_bigint(jsonb)', 'execute');

ROLLBACK;
