-- Verify taskpool:tasks_matching on pg

BEGIN;

SELECT has_function_privilege('tasks_matching(text, text, bigint, text, text, timestamptz, timestamptz)', 'execute');

ROLLBACK;
