-- Verify taskpool:count_retention on pg

BEGIN;

SELECT 'count_retention()'::regprocedure;

ROLLBACK;
