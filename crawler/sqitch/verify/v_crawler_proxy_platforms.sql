-- Verify taskpool_crawler:v_crawler_proxy_platforms on pg

BEGIN;

SELECT * FROM v_crawler_proxy_platforms WHERE FALSE;

ROLLBACK;
