-- Deploy taskpool_crawler:crawler_proxy_functions to pg
-- requires: crawler_proxies
-- requires: taskpool:_check_platform
-- requires: taskpool:taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- _proxy_label
-- A proxy URL with its password masked: what views, messages and logs show.
CREATE FUNCTION _proxy_label(url text)
RETURNS text
LANGUAGE sql
IMMUTABLE
STRICT
AS $$
    SELECT regexp_replace(_proxy_label.url, '^([A-Za-z][A-Za-z0-9+.-]*://[^:@/]*):[^@/]*@', '\1:***@');
$$;

REVOKE ALL ON FUNCTION _proxy_label(text) FROM PUBLIC;

-- v_crawler_proxies
CREATE VIEW v_crawler_proxies AS
SELECT p.id,
       p.platform,
       _proxy_label(p.url) AS url,
       CASE WHEN NOT p.enabled THEN 'disabled'
            WHEN p.rested_until > taskpool_now() THEN 'rested'
            ELSE 'ready' END AS state,
       p.enabled,
       p.consecutive_failures,
       p.rested_until,
       p.last_success_at,
       p.last_failure_at,
       p.last_error,
       p.requests_total,
       p.failures_total,
       p.rest_base,
       p.rest_cap,
       p.added_at
FROM crawler_proxies p;

COMMENT ON VIEW v_crawler_proxies IS
    'Each proxy with its health, its password masked: state is ready (take_proxy may hand it out), '
    'rested (a failure rests it until rested_until) or disabled (disable_proxy).';

-- add_proxy
-- Adds a proxy to a platform's rotation, enabled; returns its v_crawler_proxies row.
CREATE FUNCTION add_proxy(
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

-- _proxy_row
-- The proxy's v_crawler_proxies row; P0002 when there is none.
CREATE FUNCTION _proxy_row(proxy_id bigint)
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

REVOKE ALL ON FUNCTION _proxy_row(bigint) FROM PUBLIC;

-- remove_proxy
-- Removes a proxy from its platform's rotation for good; returns the row it had.
CREATE FUNCTION remove_proxy(proxy_id bigint)
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

-- disable_proxy
-- Takes a proxy out of the rotation, keeping its row and health; returns its row.
CREATE FUNCTION disable_proxy(proxy_id bigint)
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

-- enable_proxy
-- Puts a disabled proxy back into the rotation; returns its row.
CREATE FUNCTION enable_proxy(proxy_id bigint)
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

-- take_proxy
-- The next proxy a request to the platform goes through, in turn among its enabled proxies that are not rested.
CREATE FUNCTION take_proxy(platform text)
RETURNS TABLE (proxy_id bigint, url text, label text, back_in_seconds double precision)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT * FROM take_proxy('dutchie');
-- No row: the platform has no enabled proxy, so the request goes direct. A row with a proxy_id:
-- go through url (label is url with the password masked, for logs), then report_proxy_result.
-- A row with proxy_id NULL: every enabled proxy is rested, the first back in back_in_seconds;
-- the request should fail, to be retried, rather than go direct. Concurrent callers skip a
-- proxy another is taking, so they spread over the proxies; each take counts a request.
DECLARE
    v_proxy crawler_proxies;
    v_now   timestamptz := taskpool_now();
    v_back  timestamptz;
BEGIN
    IF take_proxy.platform IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'platform is required';
    END IF;
    SELECT p.* INTO v_proxy
    FROM crawler_proxies p
    WHERE p.platform = take_proxy.platform AND p.enabled
      AND (p.rested_until IS NULL OR p.rested_until <= v_now)
    ORDER BY p.turn, p.id
    LIMIT 1
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        -- Every ready proxy is being taken by someone else: wait for the one whose turn is next.
        SELECT p.* INTO v_proxy
        FROM crawler_proxies p
        WHERE p.platform = take_proxy.platform AND p.enabled
          AND (p.rested_until IS NULL OR p.rested_until <= v_now)
        ORDER BY p.turn, p.id
        LIMIT 1
        FOR UPDATE;
    END IF;
    IF FOUND THEN
        UPDATE crawler_proxies p
        SET turn = nextval('crawler_proxy_turns'), requests_total = p.requests_total + 1
        WHERE p.id = v_proxy.id;
        RETURN QUERY SELECT v_proxy.id, v_proxy.url, _proxy_label(v_proxy.url), NULL::double precision;
        RETURN;
    END IF;
    SELECT min(p.rested_until) INTO v_back
    FROM crawler_proxies p
    WHERE p.platform = take_proxy.platform AND p.enabled;
    IF v_back IS NOT NULL THEN
        RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::text,
                            greatest(extract(epoch FROM v_back - v_now)::double precision, 0);
    END IF;
END;
$$;

-- report_proxy_result
-- Records how a request through a proxy went: a failure rests the proxy, longer with each in a row; a success clears its failures.
CREATE FUNCTION report_proxy_result(proxy_id bigint, succeeded boolean, error text DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT report_proxy_result(3, false, 'connection refused');
-- Returns rested_until: NULL after a success, or for a proxy removed since it was taken (the
-- report is then ignored). Report failures of the proxy only (it cannot be reached, it answers
-- 502/503/504 itself, a timeout through it): an answer the platform gave through it is a
-- success of the proxy. The n-th failure in a row rests it for rest_base * 2^(n-1), at most
-- rest_cap.
DECLARE
    v_rested_until timestamptz;
BEGIN
    IF report_proxy_result.succeeded IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'succeeded is required';
    END IF;
    IF report_proxy_result.succeeded THEN
        UPDATE crawler_proxies p
        SET consecutive_failures = 0, rested_until = NULL, last_success_at = taskpool_now()
        WHERE p.id = report_proxy_result.proxy_id;
        RETURN NULL;
    END IF;
    UPDATE crawler_proxies p
    SET consecutive_failures = p.consecutive_failures + 1,
        failures_total = p.failures_total + 1,
        last_failure_at = taskpool_now(),
        last_error = left(coalesce(nullif(btrim(report_proxy_result.error), ''), 'failed (no error given)'), 1000),
        rested_until = taskpool_now()
            + least(p.rest_cap, p.rest_base * power(2, least(p.consecutive_failures, 30)))
    WHERE p.id = report_proxy_result.proxy_id
    RETURNING p.rested_until INTO v_rested_until;
    RETURN v_rested_until;
END;
$$;

COMMENT ON FUNCTION add_proxy(text, text, interval, interval) IS $$Adds a proxy to a platform's rotation, enabled; returns its v_crawler_proxies row (the password masked).
Example:
  SELECT id, url FROM add_proxy('dutchie', 'http://crawler:secret@10.0.0.5:3128');
The URL is http(s)://[user:password@]host[:port]; a failure rests the proxy for rest_base, doubling with each failure in a row, up to rest_cap. An unknown platform or a bad URL is 22023; the same URL twice for a platform 23505.$$;
COMMENT ON FUNCTION remove_proxy(bigint) IS $$Removes a proxy from its platform's rotation for good; returns the row it had.
Example:
  SELECT url FROM remove_proxy(3);$$;
COMMENT ON FUNCTION disable_proxy(bigint) IS $$Takes a proxy out of the rotation, keeping its row and health; returns its row.
Example:
  SELECT state FROM disable_proxy(3);
A platform whose proxies are all disabled is crawled directly, as one with none.$$;
COMMENT ON FUNCTION enable_proxy(bigint) IS $$Puts a disabled proxy back into the rotation; returns its row.
Example:
  SELECT state FROM enable_proxy(3);$$;
COMMENT ON FUNCTION take_proxy(text) IS $$The next proxy a request to the platform goes through, in turn among its enabled proxies that are not rested.
Example:
  SELECT * FROM take_proxy('dutchie');
No row: no enabled proxy, go direct. proxy_id NULL: every enabled proxy is rested, the first back in back_in_seconds (fail the request, to be retried).$$;
COMMENT ON FUNCTION report_proxy_result(bigint, boolean, text) IS $$Records how a request through a proxy went: a failure rests the proxy, longer with each in a row; a success clears its failures.
Example:
  SELECT report_proxy_result(3, false, 'connection refused');
Returns rested_until (NULL after a success). The n-th failure in a row rests it for rest_base * 2^(n-1), at most rest_cap.$$;

REVOKE ALL ON FUNCTION add_proxy(text, text, interval, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION remove_proxy(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION disable_proxy(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION enable_proxy(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION take_proxy(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION report_proxy_result(bigint, boolean, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION take_proxy(text) TO taskpool_worker;
GRANT EXECUTE ON FUNCTION report_proxy_result(bigint, boolean, text) TO taskpool_worker;

COMMIT;
