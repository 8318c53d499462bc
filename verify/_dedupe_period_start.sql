-- Verify taskpool:_dedupe_period_start on pg

BEGIN;

SELECT '_dedupe_period_start(timestamp with time zone,interval)'::regprocedure;

ROLLBACK;
