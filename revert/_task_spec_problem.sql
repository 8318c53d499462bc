-- Revert taskpool:_task_spec_problem from pg

BEGIN;

DROP FUNCTION _task_spec_problem(task_spec, integer, task_roles, boolean);

COMMIT;
