-- Revert taskpool:_check_role from pg

BEGIN;

DROP FUNCTION _check_role(task_roles);

COMMIT;
