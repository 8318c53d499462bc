-- Revert taskpool_crawler:crawler_proxies from pg

BEGIN;

DROP SEQUENCE crawler_proxy_turns;
DROP TABLE crawler_proxies;

COMMIT;
