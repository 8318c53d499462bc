-- Verify taskpool:_check_role on pg

BEGIN;

SELECT 1/has_function_privilege('_check_role(task_roles)', 'execute')::int;

ROLLBACK;
