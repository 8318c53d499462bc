-- Revert taskpool_crawler:take_proxy from pg

-- Nothing to undo: deploy/take_proxy.sql redefined take_proxy as platform_proxies_required had left it.

BEGIN;
COMMIT;
