-- Verify taskpool:count_prunable_tasks on pg

BEGIN;

SELECT has_function_privilege('count_prunable_tasks(interval)', 'execute');

ROLLBACK;
