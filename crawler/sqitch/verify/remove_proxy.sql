-- Verify taskpool_crawler:remove_proxy on pg

BEGIN;

SELECT 'remove_proxy(bigint)'::regprocedure;

ROLLBACK;
