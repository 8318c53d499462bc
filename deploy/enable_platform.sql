-- Deploy taskpool:enable_platform to pg
-- requires: platform_governance_enabled
-- requires: _check_platform

BEGIN;
SET client_min_messages = 'warning';

-- enable_platform
-- Enables a disabled platform: its tasks are handed out again; returns its platform_governance row.
CREATE FUNCTION enable_platform(platform text)
RETURNS platform_governance
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT platform, enabled FROM enable_platform('dutchie');
-- Enabling an enabled platform changes nothing (one without a governance row gets one, with the
-- defaults). Its circuit stays as it was: an open circuit still holds its tasks back. Workers
-- find the platform's tasks at their next poll: nobody is woken.
DECLARE
    v_platform platform_governance;
BEGIN
    PERFORM _check_platform(enable_platform.platform);

    INSERT INTO platform_governance AS g (platform) VALUES (enable_platform.platform)
    ON CONFLICT ON CONSTRAINT platform_governance_pkey DO UPDATE
    SET enabled = true, disabled_at = NULL, disabled_by = NULL, disable_reason = NULL
    WHERE NOT g.enabled
    RETURNING g.* INTO v_platform;
    IF NOT FOUND THEN
        SELECT g.* INTO v_platform FROM platform_governance g WHERE g.platform = enable_platform.platform;
    END IF;
    RETURN v_platform;
END;
$$;

REVOKE ALL ON FUNCTION enable_platform(text) FROM PUBLIC;
COMMENT ON FUNCTION enable_platform(text) IS $$Enables a disabled platform: its tasks are handed out again (an open circuit still holds them back). Returns its platform_governance row.
Example:
  SELECT platform, enabled FROM enable_platform('dutchie');
Idempotent: an enabled platform is left as it is. A platform no store, task or governance row names raises 22023.$$;

COMMIT;
