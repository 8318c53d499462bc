-- Verify taskpool:_drop_task_history_partitions on pg

BEGIN;

SELECT '_drop_task_history_partitions(text[], timestamptz, boolean)'::regprocedure;

ROLLBACK;
