-- Revert taskpool_crawler:set_proxies_required from pg

-- Nothing to undo: deploy/set_proxies_required.sql redefined set_proxies_required as platform_proxies_required had left it.

BEGIN;
COMMIT;
