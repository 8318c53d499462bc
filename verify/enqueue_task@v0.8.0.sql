-- Verify taskpool:enqueue_task on pg

BEGIN;

SELECT 'enqueue_task(text,jsonb,integer,integer,timestamp with time zone,text,integer,text,jsonb,interval,interval,interval,boolean)'::regprocedure;

ROLLBACK;
