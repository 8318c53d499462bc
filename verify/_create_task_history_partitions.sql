-- Verify taskpool:_create_task_history_partitions on pg

BEGIN;

SELECT '_create_task_history_partitions(date[])'::regprocedure;

ROLLBACK;
