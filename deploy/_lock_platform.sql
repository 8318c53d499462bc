-- Deploy taskpool:_lock_platform to pg
-- requires: platform_governance

BEGIN;
SET client_min_messages = 'warning';

-- _lock_platform
-- Locks and returns a platform's governance row, creating it with the defaults on first sight.
CREATE FUNCTION _lock_platform(platform text)
RETURNS platform_governance
LANGUAGE plpgsql
AS $$
DECLARE
    v_row platform_governance;
BEGIN
    IF _lock_platform.platform IS NULL OR btrim(_lock_platform.platform) = '' OR length(_lock_platform.platform) > 100 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('platform must be a name of 1 to 100 characters, not %L', _lock_platform.platform);
    END IF;
    INSERT INTO platform_governance (platform) VALUES (_lock_platform.platform) ON CONFLICT DO NOTHING;
    SELECT * INTO v_row FROM platform_governance g WHERE g.platform = _lock_platform.platform FOR UPDATE;
    RETURN v_row;
END;
$$;

REVOKE ALL ON FUNCTION _lock_platform(text) FROM PUBLIC;

COMMIT;
