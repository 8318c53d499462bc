-- Deploy taskpool_crawler:disable_proxy to pg
-- requires: crawler_proxy_functions

-- disable_proxy's home: its live body, unchanged from crawler_proxy_functions.
-- Change disable_proxy here, with `sqitch rework disable_proxy`.

BEGIN;
SET client_min_messages = 'warning';

-- disable_proxy
-- Takes a proxy out of the rotation, keeping its row and health; returns its row.
CREATE OR REPLACE FUNCTION disable_proxy(proxy_id bigint)
RETURNS v_crawler_proxies
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT state FROM disable_proxy(3);
-- For operators; enable_proxy puts it back. A platform whose proxies are all disabled is crawled
-- directly, as one with none.
BEGIN
    PERFORM _proxy_row(disable_proxy.proxy_id);
    UPDATE crawler_proxies p SET enabled = false WHERE p.id = disable_proxy.proxy_id;
    RETURN _proxy_row(disable_proxy.proxy_id);
END;
$$;

COMMIT;
