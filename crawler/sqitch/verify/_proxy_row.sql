-- Verify taskpool_crawler:_proxy_row on pg

BEGIN;

SELECT '_proxy_row(bigint)'::regprocedure;

ROLLBACK;
