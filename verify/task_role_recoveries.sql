-- Verify taskpool:task_role_recoveries on pg

BEGIN;

SELECT role, last_run_at FROM task_role_recoveries WHERE false;

ROLLBACK;
