-- Verify taskpool:enqueue_task on pg

BEGIN;

SELECT 1 / count(*) FROM pg_catalog.pg_proc
WHERE oid = 'enqueue_task(text,jsonb,integer,integer,timestamp with time zone,text,integer,text,jsonb,interval,interval,interval,boolean)'::regprocedure
  AND prosrc LIKE '%INSERT INTO worker_tasks%'
  AND prosrc LIKE '%RETURN (_enqueue(ARRAY[ROW(%::task_spec]%';

ROLLBACK;
