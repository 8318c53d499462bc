-- Verify taskpool:taskpool_health on pg

BEGIN;

SELECT 'taskpool_health(interval,interval)'::regprocedure;

ROLLBACK;
