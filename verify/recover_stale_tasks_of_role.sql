-- Verify taskpool:recover_stale_tasks_of_role on pg

BEGIN;

SELECT 1/has_function_privilege('taskpool_worker', 'recover_stale_tasks_of_role(text)', 'execute')::int;

ROLLBACK;
