-- Revert taskpool_crawler:add_proxy from pg

-- Nothing to undo: deploy/add_proxy.sql redefined add_proxy as crawler_proxy_functions had left it.

BEGIN;
COMMIT;
