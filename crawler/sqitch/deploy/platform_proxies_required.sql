-- Deploy taskpool_crawler:platform_proxies_required to pg
-- requires: crawler_proxy_functions
-- requires: taskpool:_check_platform
-- requires: taskpool:taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- crawler_platform_settings
-- The crawler's settings of a platform: whether its requests may go direct.
CREATE TABLE crawler_platform_settings (
    platform          text        PRIMARY KEY,
    proxies_required  boolean     NOT NULL DEFAULT false,
    updated_at        timestamptz NOT NULL DEFAULT taskpool_now()
);

COMMENT ON TABLE crawler_platform_settings IS
    'The crawler''s settings of a platform, one row per platform that has any (set_proxies_required); '
    'a platform without a row has the defaults.';
COMMENT ON COLUMN crawler_platform_settings.proxies_required IS
    'Its requests go through its proxies only: with none enabled they fail, to be retried, instead '
    'of going direct (take_proxy).';

-- v_crawler_proxy_platforms
CREATE VIEW v_crawler_proxy_platforms AS
SELECT k.platform,
       coalesce(s.proxies_required, false) AS proxies_required,
       count(p.id) AS proxies,
       count(p.id) FILTER (WHERE p.enabled) AS enabled_proxies,
       count(p.id) FILTER (WHERE p.enabled AND (p.rested_until IS NULL OR p.rested_until <= taskpool_now()))
           AS ready_proxies,
       CASE WHEN count(p.id) FILTER (WHERE p.enabled) > 0 THEN 'proxied'
            WHEN coalesce(s.proxies_required, false) THEN 'refused'
            ELSE 'direct' END AS requests
FROM (SELECT c.platform FROM crawler_proxies c UNION SELECT t.platform FROM crawler_platform_settings t) k
LEFT JOIN crawler_platform_settings s ON s.platform = k.platform
LEFT JOIN crawler_proxies p ON p.platform = k.platform
GROUP BY k.platform, s.proxies_required;

COMMENT ON VIEW v_crawler_proxy_platforms IS
    'Each platform that has proxies or crawler settings: whether it requires proxies, how many it has '
    '(enabled, ready), and how its requests go: proxied (through its enabled proxies), direct (it has '
    'none enabled and does not require them) or refused (it requires proxies and has none enabled: its '
    'requests fail, to be retried).';

-- set_proxies_required
-- Sets whether a platform's requests must go through its proxies; returns its v_crawler_proxy_platforms row.
CREATE FUNCTION set_proxies_required(platform text, required boolean)
RETURNS v_crawler_proxy_platforms
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT requests FROM set_proxies_required('dutchie', true);
-- For operators (not granted to taskpool_worker). Required: with no enabled proxy (none added,
-- or all disabled) the platform's requests fail, to be retried, rather than go direct, as a
-- crawler that must never show its own address needs. The platform must be one taskpool knows.
DECLARE
    v_row v_crawler_proxy_platforms;
BEGIN
    PERFORM _check_platform(set_proxies_required.platform);
    IF set_proxies_required.required IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'required must be true or false, not NULL';
    END IF;
    INSERT INTO crawler_platform_settings AS s (platform, proxies_required)
    VALUES (set_proxies_required.platform, set_proxies_required.required)
    ON CONFLICT ON CONSTRAINT crawler_platform_settings_pkey DO UPDATE
    SET proxies_required = excluded.proxies_required, updated_at = taskpool_now()
    WHERE s.proxies_required IS DISTINCT FROM excluded.proxies_required;
    SELECT * INTO v_row FROM v_crawler_proxy_platforms v WHERE v.platform = set_proxies_required.platform;
    RETURN v_row;
END;
$$;

COMMENT ON FUNCTION set_proxies_required(text, boolean) IS $$Sets whether a platform's requests must go through its proxies; returns its v_crawler_proxy_platforms row.
Example:
  SELECT requests FROM set_proxies_required('dutchie', true);
Required: with no enabled proxy its requests fail, to be retried, and never go direct. An unknown platform is 22023, a NULL 22004.$$;
REVOKE ALL ON FUNCTION set_proxies_required(text, boolean) FROM PUBLIC;

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

COMMENT ON FUNCTION take_proxy(text) IS $$The next proxy a request to the platform goes through, in turn among its enabled proxies that are not rested.
Example:
  SELECT * FROM take_proxy('dutchie');
No row: no enabled proxy, go direct. proxy_id NULL: every enabled proxy is rested, the first back in back_in_seconds (fail the request, to be retried); back_in_seconds NULL too: the platform requires proxies and has none enabled (fail the request, to be retried; never go direct).$$;

COMMENT ON TABLE crawler_proxies IS
    'The HTTP proxies a platform''s requests go through, in turn (take_proxy), with their health '
    '(report_proxy_result). A platform with no enabled proxy is crawled directly, unless it requires '
    'proxies (crawler_platform_settings): then its requests fail, to be retried. Operators manage '
    'the rows with add_proxy, remove_proxy, enable_proxy and disable_proxy.';
COMMENT ON FUNCTION disable_proxy(bigint) IS $$Takes a proxy out of the rotation, keeping its row and health; returns its row.
Example:
  SELECT state FROM disable_proxy(3);
A platform whose proxies are all disabled is crawled directly, as one with none, unless it requires proxies (set_proxies_required): then its requests fail, to be retried.$$;

COMMIT;
