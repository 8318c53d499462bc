-- Verify taskpool:taskpool_metrics on pg

BEGIN;

SELECT 'taskpool_metrics()'::regprocedure;

ROLLBACK;
