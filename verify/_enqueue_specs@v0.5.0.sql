-- Verify taskpool:_enqueue_specs on pg

BEGIN;

SELECT has_function_privilege('_enqueue_specs(jsonb, text)', 'execute');

ROLLBACK;
