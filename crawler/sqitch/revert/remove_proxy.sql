-- Revert taskpool_crawler:remove_proxy from pg

-- Nothing to undo: deploy/remove_proxy.sql redefined remove_proxy as crawler_proxy_functions had left it.

BEGIN;
COMMIT;
