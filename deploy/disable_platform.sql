-- Deploy taskpool:disable_platform to pg
-- requires: platform_governance_enabled
-- requires: _check_platform
-- requires: _claim_tasks

BEGIN;
SET client_min_messages = 'warning';

-- disable_platform
-- Disables a platform: no claim hands out its tasks until enable_platform; returns its platform_governance row.
CREATE FUNCTION disable_platform(platform text, reason text DEFAULT NULL)
RETURNS platform_governance
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT platform, enabled FROM disable_platform('dutchie', reason := 'they asked us to stop');
-- As a paused role, but for every role's tasks of the platform (seed 003's sources.enabled):
-- enqueues still land, tasks already claimed or running finish, and acquire_platform_request
-- still lets their requests through. A platform without a governance row gets one, with the
-- defaults. Disabling a disabled platform changes nothing: it keeps when, by whom and why.
DECLARE
    v_platform platform_governance;
BEGIN
    PERFORM _check_platform(disable_platform.platform);
    IF length(disable_platform.reason) > 1000 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('reason must be at most 1000 characters, not %s', length(disable_platform.reason));
    END IF;

    INSERT INTO platform_governance AS g (platform, enabled, disabled_at, disabled_by, disable_reason)
    VALUES (disable_platform.platform, false, taskpool_now(), session_user,
            nullif(btrim(disable_platform.reason), ''))
    ON CONFLICT ON CONSTRAINT platform_governance_pkey DO UPDATE
    SET enabled = false, disabled_at = excluded.disabled_at, disabled_by = excluded.disabled_by,
        disable_reason = excluded.disable_reason
    WHERE g.enabled
    RETURNING g.* INTO v_platform;
    IF NOT FOUND THEN
        SELECT g.* INTO v_platform FROM platform_governance g WHERE g.platform = disable_platform.platform;
    END IF;
    RETURN v_platform;
END;
$$;

REVOKE ALL ON FUNCTION disable_platform(text, text) FROM PUBLIC;
COMMENT ON FUNCTION disable_platform(text, text) IS $$Disables a platform: no claim hands out its tasks until enable_platform; enqueues still land and tasks in flight finish. Returns its platform_governance row.
Example:
  SELECT platform, enabled FROM disable_platform('dutchie', reason := 'they asked us to stop');
Idempotent: a disabled platform keeps when, by whom (disabled_by, the session's user) and why. A platform no store, task or governance row names raises 22023.$$;

COMMIT;
