-- Deploy taskpool_crawler:set_proxies_required to pg
-- requires: platform_proxies_required

-- set_proxies_required's home: its live body, unchanged from platform_proxies_required.
-- Change set_proxies_required here, with `sqitch rework set_proxies_required`.

BEGIN;
SET client_min_messages = 'warning';

-- set_proxies_required
-- Sets whether a platform's requests must go through its proxies; returns its v_crawler_proxy_platforms row.
CREATE OR REPLACE FUNCTION set_proxies_required(platform text, required boolean)
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

COMMIT;
