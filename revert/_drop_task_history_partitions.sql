-- Revert taskpool:_drop_task_history_partitions from pg

BEGIN;

DROP FUNCTION _drop_task_history_partitions(text[], timestamptz, boolean);

COMMIT;
