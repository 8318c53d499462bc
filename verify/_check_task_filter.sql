-- Verify taskpool:_check_task_filter on pg

BEGIN;

SELECT '_check_task_filter(text,text,bigint,text,text,timestamp with time zone,timestamp with time zone)'::regprocedure;

ROLLBACK;
