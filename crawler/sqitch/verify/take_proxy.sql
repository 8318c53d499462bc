-- Verify taskpool_crawler:take_proxy on pg

BEGIN;

SELECT 'take_proxy(text)'::regprocedure;

ROLLBACK;
