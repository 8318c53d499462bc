-- Revert taskpool:_restore_tasks_from_history from pg

BEGIN;

DROP FUNCTION _restore_tasks_from_history(bigint[]);

COMMIT;
