-- Verify taskpool:_cron_parse on pg

BEGIN;

SELECT '_cron_parse(text)'::regprocedure;

ROLLBACK;
