-- Verify taskpool_crawler:set_proxies_required on pg

BEGIN;

SELECT 'set_proxies_required(text,boolean)'::regprocedure;

ROLLBACK;
