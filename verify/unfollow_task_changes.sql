-- Verify taskpool:unfollow_task_changes on pg

BEGIN;

SELECT has_function_privilege('unfollow_task_changes(text)', 'execute');

ROLLBACK;
