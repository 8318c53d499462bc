-- Deploy taskpool_crawler:add_proxy to pg
-- requires: crawler_proxy_functions

-- add_proxy's home: its live body, unchanged from crawler_proxy_functions.
-- Change add_proxy here, with `sqitch rework add_proxy`.

BEGIN;
SET client_min_messages = 'warning';

-- add_proxy
-- Adds a proxy to a platform's rotation, enabled; returns its v_crawler_proxies row.
CREATE OR REPLACE FUNCTION add_proxy(
    platform  text,
    url       text,
    rest_base interval DEFAULT '30 seconds',
    rest_cap  interval DEFAULT '30 minutes')
RETURNS v_crawler_proxies
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT id, url FROM add_proxy('dutchie', 'http://crawler:secret@10.0.0.5:3128');
-- For operators (not granted to taskpool_worker). The platform must be one taskpool knows (a
-- store, task or platform_governance row names it). The URL is http:// or https://, a host and
-- an optional port, with optional user:password@ (sent as Proxy-Authorization); messages show
-- it with the password masked. A failure rests the proxy for rest_base, doubling with each
-- failure in a row, up to rest_cap. The same URL twice for a platform is 23505.
DECLARE
    v_port  integer;
    v_other bigint;
    v_id    bigint;
    v_row   v_crawler_proxies;
BEGIN
    PERFORM _check_platform(add_proxy.platform);
    IF add_proxy.url IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'url is required';
    END IF;
    IF add_proxy.url !~* '^https?://' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('url must start with http:// or https://, not %L', left(_proxy_label(add_proxy.url), 200)),
            HINT = 'A proxy is reached over HTTP: http://[user:password@]host:port.';
    END IF;
    IF length(add_proxy.url) > 2000
       OR add_proxy.url !~* '^https?://([^/@\s]+@)?([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?/?$' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('url must be http(s)://[user:password@]host[:port] and nothing more, not %L',
                             left(_proxy_label(add_proxy.url), 200));
    END IF;
    v_port := substring(add_proxy.url FROM ':([0-9]{1,5})/?$')::integer;
    IF v_port NOT BETWEEN 1 AND 65535 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('url''s port must be from 1 to 65535, not %s', v_port);
    END IF;
    IF add_proxy.rest_base IS NULL OR add_proxy.rest_base <= interval '0' OR add_proxy.rest_base > interval '1 day' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('rest_base must be more than 0 and at most 1 day, not %s',
                             coalesce(add_proxy.rest_base::text, 'NULL'));
    END IF;
    IF add_proxy.rest_cap IS NULL OR add_proxy.rest_cap < add_proxy.rest_base OR add_proxy.rest_cap > interval '1 day' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('rest_cap must be from rest_base (%s) to 1 day, not %s',
                             add_proxy.rest_base, coalesce(add_proxy.rest_cap::text, 'NULL'));
    END IF;

    SELECT p.id INTO v_other FROM crawler_proxies p
    WHERE p.platform = add_proxy.platform AND p.url = add_proxy.url;
    IF FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '23505',
            MESSAGE = format('%s is proxy %s of %s already', _proxy_label(add_proxy.url), v_other, add_proxy.platform);
    END IF;

    -- A new proxy takes the next turn, so it joins the rotation rather than jumping the queue.
    INSERT INTO crawler_proxies (platform, url, rest_base, rest_cap, turn)
    VALUES (add_proxy.platform, add_proxy.url, add_proxy.rest_base, add_proxy.rest_cap, nextval('crawler_proxy_turns'))
    RETURNING id INTO v_id;
    SELECT * INTO v_row FROM v_crawler_proxies v WHERE v.id = v_id;
    RETURN v_row;
END;
$$;

COMMIT;
