-- Verify taskpool:retry_tasks on pg

BEGIN;

SELECT has_function_privilege('retry_tasks(text, text, bigint, text, text, timestamptz, timestamptz, integer)', 'execute');

ROLLBACK;
