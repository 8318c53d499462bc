-- Deploy taskpool_crawler:remove_proxy to pg
-- requires: crawler_proxy_functions

-- remove_proxy's home: its live body, unchanged from crawler_proxy_functions.
-- Change remove_proxy here, with `sqitch rework remove_proxy`.

BEGIN;
SET client_min_messages = 'warning';

-- remove_proxy
-- Removes a proxy from its platform's rotation for good; returns the row it had.
CREATE OR REPLACE FUNCTION remove_proxy(proxy_id bigint)
RETURNS v_crawler_proxies
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT url FROM remove_proxy(3);
-- For operators. A request already going through it finishes; its report is then ignored.
DECLARE
    v_row v_crawler_proxies;
BEGIN
    v_row := _proxy_row(remove_proxy.proxy_id);
    DELETE FROM crawler_proxies p WHERE p.id = remove_proxy.proxy_id;
    RETURN v_row;
END;
$$;

COMMIT;
