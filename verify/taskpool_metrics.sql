-- Verify taskpool:taskpool_metrics on pg

BEGIN;

SELECT 'taskpool_metrics()'::regprocedure;
SELECT 1 / count(*) FROM pg_proc WHERE proname = 'taskpool_metrics' AND prosrc LIKE '%taskpool_retention_backlog%';

ROLLBACK;
