-- Revert taskpool_crawler:enable_proxy from pg

-- Nothing to undo: deploy/enable_proxy.sql redefined enable_proxy as crawler_proxy_functions had left it.

BEGIN;
COMMIT;
