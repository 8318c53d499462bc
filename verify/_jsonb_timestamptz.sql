-- Verify taskpool:_jsonb_timestamptz on pg

BEGIN;

SELECT has_function_privilege('_jsonb_timestamptz(jsonb)', 'execute');

ROLLBACK;
