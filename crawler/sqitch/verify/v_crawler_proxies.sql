-- Verify taskpool_crawler:v_crawler_proxies on pg

BEGIN;

SELECT * FROM v_crawler_proxies WHERE FALSE;

ROLLBACK;
