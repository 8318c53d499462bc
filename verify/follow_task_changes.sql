-- Verify taskpool:follow_task_changes on pg

BEGIN;

SELECT has_function_privilege('follow_task_changes(text, interval)', 'execute');

ROLLBACK;
