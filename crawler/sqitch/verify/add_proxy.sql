-- Verify taskpool_crawler:add_proxy on pg

BEGIN;

SELECT 'add_proxy(text,text,interval,interval)'::regprocedure;

ROLLBACK;
