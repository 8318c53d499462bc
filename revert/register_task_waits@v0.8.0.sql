-- Revert taskpool:register_task_waits from pg

BEGIN;

DROP FUNCTION unregister_task_waits(bigint[]);
DROP FUNCTION register_task_waits(bigint[], boolean);

COMMIT;
