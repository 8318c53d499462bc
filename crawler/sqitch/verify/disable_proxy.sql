-- Verify taskpool_crawler:disable_proxy on pg

BEGIN;

SELECT 'disable_proxy(bigint)'::regprocedure;

ROLLBACK;
