-- Revert taskpool_crawler:v_crawler_proxies from pg

-- Nothing to undo: deploy/v_crawler_proxies.sql redefined v_crawler_proxies as crawler_proxy_functions had left it.

BEGIN;
COMMIT;
