-- Verify taskpool:_jsonb_number on pg

BEGIN;

SELECT has_function_privilege('_jsonb_number(jsonb)', 'execute');

ROLLBACK;
