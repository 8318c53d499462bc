-- Deploy taskpool_crawler:_proxy_row to pg
-- requires: crawler_proxy_functions

-- _proxy_row's home: its live body, unchanged from crawler_proxy_functions.
-- Change _proxy_row here, with `sqitch rework _proxy_row`.

BEGIN;
SET client_min_messages = 'warning';

-- _proxy_row
-- The proxy's v_crawler_proxies row; P0002 when there is none.
CREATE OR REPLACE FUNCTION _proxy_row(proxy_id bigint)
RETURNS v_crawler_proxies
LANGUAGE plpgsql
STABLE
SET search_path = public, pg_temp
AS $$
DECLARE
    v_row v_crawler_proxies;
BEGIN
    SELECT * INTO v_row FROM v_crawler_proxies v WHERE v.id = _proxy_row.proxy_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002',
            MESSAGE = format('proxy %s does not exist', coalesce(_proxy_row.proxy_id::text, 'NULL'));
    END IF;
    RETURN v_row;
END;
$$;

COMMIT;
