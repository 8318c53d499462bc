-- Verify taskpool:mark_task_completed on pg

BEGIN;

SELECT has_function_privilege('mark_task_completed(bigint, jsonb)', 'execute');
SELECT 1/count(*) FROM task_status_transitions WHERE from_status = 'pending' AND to_status = 'completed';

ROLLBACK;
