-- Revert taskpool_crawler:v_crawler_proxy_platforms from pg

-- Nothing to undo: deploy/v_crawler_proxy_platforms.sql redefined v_crawler_proxy_platforms as platform_proxies_required had left it.

BEGIN;
COMMIT;
