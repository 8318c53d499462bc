-- Verify taskpool:enqueue_task on pg

BEGIN;

SELECT has_function_privilege('enqueue_task(text, jsonb, integer, integer, timestamptz, text, integer, text)', 'execute');

ROLLBACK;
