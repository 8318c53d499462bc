-- Verify taskpool_crawler:enable_proxy on pg

BEGIN;

SELECT 'enable_proxy(bigint)'::regprocedure;

ROLLBACK;
