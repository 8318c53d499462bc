-- Revert taskpool_crawler:disable_proxy from pg

-- Nothing to undo: deploy/disable_proxy.sql redefined disable_proxy as crawler_proxy_functions had left it.

BEGIN;
COMMIT;
