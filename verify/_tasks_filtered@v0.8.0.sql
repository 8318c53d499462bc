-- Verify taskpool:_tasks_filtered on pg

BEGIN;

SELECT '_tasks_filtered(text,text,bigint,text,text,timestamp with time zone,timestamp with time zone)'::regprocedure;

ROLLBACK;
