-- Verify taskpool:unregister_task_waits on pg

BEGIN;

SELECT 'unregister_task_waits(bigint[])'::regprocedure;

ROLLBACK;
