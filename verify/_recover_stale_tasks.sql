-- Verify taskpool:_recover_stale_tasks on pg

BEGIN;

SELECT '_recover_stale_tasks(integer,text)'::regprocedure;

ROLLBACK;
