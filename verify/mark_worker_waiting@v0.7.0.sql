-- Verify taskpool:mark_worker_waiting on pg

BEGIN;

SELECT 1/has_function_privilege('taskpool_worker', 'mark_worker_waiting(text)', 'execute')::integer;
SELECT 1/has_function_privilege('taskpool_worker', 'mark_worker_waiting(text, text)', 'execute')::integer;

ROLLBACK;
