-- Revert taskpool_crawler:report_proxy_result from pg

-- Nothing to undo: deploy/report_proxy_result.sql redefined report_proxy_result as crawler_proxy_functions had left it.

BEGIN;
COMMIT;
