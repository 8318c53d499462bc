-- Verify taskpool_crawler:report_proxy_result on pg

BEGIN;

SELECT 'report_proxy_result(bigint,boolean,text)'::regprocedure;

ROLLBACK;
