-- Revert taskpool_crawler:crawler_proxy_functions from pg

BEGIN;

DROP FUNCTION report_proxy_result(bigint, boolean, text);
DROP FUNCTION take_proxy(text);
DROP FUNCTION enable_proxy(bigint);
DROP FUNCTION disable_proxy(bigint);
DROP FUNCTION remove_proxy(bigint);
DROP FUNCTION _proxy_row(bigint);
DROP FUNCTION add_proxy(text, text, interval, interval);
DROP VIEW v_crawler_proxies;
DROP FUNCTION _proxy_label(text);

COMMIT;
