-- Verify taskpool:_cron_field on pg

BEGIN;

SELECT '_cron_field(text,text,integer,integer,text[])'::regprocedure;

ROLLBACK;
