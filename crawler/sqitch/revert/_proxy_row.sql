-- Revert taskpool_crawler:_proxy_row from pg

-- Nothing to undo: deploy/_proxy_row.sql redefined _proxy_row as crawler_proxy_functions had left it.

BEGIN;
COMMIT;
