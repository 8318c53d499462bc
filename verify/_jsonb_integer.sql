-- Verify taskpool:_jsonb_integer on pg

BEGIN;

SELECT has_function_privilege('_jsonb_integer(jsonb)', 'execute');

ROLLBACK;
