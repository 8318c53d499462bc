-- Deploy taskpool_crawler:enable_proxy to pg
-- requires: crawler_proxy_functions

-- enable_proxy's home: its live body, unchanged from crawler_proxy_functions.
-- Change enable_proxy here, with `sqitch rework enable_proxy`.

BEGIN;
SET client_min_messages = 'warning';

-- enable_proxy
-- Puts a disabled proxy back into the rotation; returns its row.
CREATE OR REPLACE FUNCTION enable_proxy(proxy_id bigint)
RETURNS v_crawler_proxies
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT state FROM enable_proxy(3);
-- For operators. Its health is kept: a proxy rested when it was disabled stays rested until its
-- rested_until.
BEGIN
    PERFORM _proxy_row(enable_proxy.proxy_id);
    UPDATE crawler_proxies p SET enabled = true WHERE p.id = enable_proxy.proxy_id;
    RETURN _proxy_row(enable_proxy.proxy_id);
END;
$$;

COMMIT;
