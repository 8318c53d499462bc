-- Revert taskpool:_create_task_history_partitions from pg

BEGIN;

DROP FUNCTION _create_task_history_partitions(date[]);

COMMIT;
