-- Verify taskpool:_restore_tasks_from_history on pg

BEGIN;

SELECT '_restore_tasks_from_history(bigint[])'::regprocedure;

ROLLBACK;
