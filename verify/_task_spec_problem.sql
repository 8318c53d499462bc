-- Verify taskpool:_task_spec_problem on pg

BEGIN;

SELECT 1 / (_task_spec_problem(ROW(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::task_spec,
                               0, NULL::task_roles, false) = 'no_role')::integer;

ROLLBACK;
