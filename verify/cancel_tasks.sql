-- Verify taskpool:cancel_tasks on pg

BEGIN;

SELECT has_function_privilege('cancel_tasks(text, text, bigint, text, text, timestamptz, timestamptz, integer)', 'execute');

ROLLBACK;
