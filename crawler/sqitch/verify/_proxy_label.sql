-- Verify taskpool_crawler:_proxy_label on pg

BEGIN;

SELECT '_proxy_label(text)'::regprocedure;

ROLLBACK;
