-- Verify taskpool:taskpool_metrics_capacity_units on pg

BEGIN;

SELECT 1 / count(*)::integer FROM pg_proc
WHERE oid = 'taskpool_metrics()'::regprocedure AND prosrc LIKE '%taskpool_role_unserved%';

ROLLBACK;
