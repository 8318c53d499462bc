-- Deploy taskpool_crawler:take_proxy to pg
-- requires: platform_proxies_required

-- take_proxy's home: its live body, unchanged from platform_proxies_required.
-- Change take_proxy here, with `sqitch rework take_proxy`.

BEGIN;
SET client_min_messages = 'warning';

-- take_proxy
-- The next proxy a request to the platform goes through, in turn among its enabled proxies that are not rested.
CREATE OR REPLACE FUNCTION take_proxy(platform text)
RETURNS TABLE (proxy_id bigint, url text, label text, back_in_seconds double precision)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT * FROM take_proxy('dutchie');
-- No row: the platform has no enabled proxy and does not require proxies, so the request goes
-- direct. A row with a proxy_id:
-- go through url (label is url with the password masked, for logs), then report_proxy_result.
-- A row with proxy_id NULL: every enabled proxy is rested, the first back in back_in_seconds;
-- the request should fail, to be retried, rather than go direct. A row of NULLs, back_in_seconds
-- too: the platform requires proxies (set_proxies_required) and has none enabled; the request
-- fails, to be retried, and never goes direct. Concurrent callers skip a
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
    ELSIF EXISTS (SELECT FROM crawler_platform_settings s
                  WHERE s.platform = take_proxy.platform AND s.proxies_required) THEN
        RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::text, NULL::double precision;
    END IF;
END;
$$;

COMMIT;
