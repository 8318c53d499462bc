-- Deploy taskpool:pause_role to pg
-- requires: task_roles_paused
-- requires: _claim_tasks

BEGIN;
SET client_min_messages = 'warning';

-- pause_role
-- Pauses a role: no claim hands out its tasks until resume_role; returns the role's row.
CREATE FUNCTION pause_role(role text, reason text DEFAULT NULL)
RETURNS task_roles
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT role, paused_at FROM pause_role('product_resync', reason := 'platform maintenance');
-- Enqueues still land; tasks already claimed or running finish (their heartbeats and outcomes
-- are accepted). Pausing a paused role changes nothing: it keeps when, by whom and why it was
-- first paused. A claim already under way when the pause commits may still hand out its batch.
DECLARE
    v_role task_roles;
BEGIN
    IF pause_role.role IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'role is required';
    END IF;
    IF length(pause_role.reason) > 1000 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('reason must be at most 1000 characters, not %s', length(pause_role.reason));
    END IF;

    UPDATE task_roles r
    SET paused_at = taskpool_now(), paused_by = session_user, pause_reason = nullif(btrim(pause_role.reason), '')
    WHERE r.role = pause_role.role AND r.paused_at IS NULL
    RETURNING r.* INTO v_role;
    IF NOT FOUND THEN
        SELECT r.* INTO v_role FROM task_roles r WHERE r.role = pause_role.role;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING
                ERRCODE = '22023',
                MESSAGE = format('unknown role %L', pause_role.role),
                HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
        END IF;
    END IF;
    RETURN v_role;
END;
$$;

REVOKE ALL ON FUNCTION pause_role(text, text) FROM PUBLIC;
COMMENT ON FUNCTION pause_role(text, text) IS $$Pauses a role: no claim hands out its tasks until resume_role; enqueues still land and tasks in flight finish. Returns the role's row.
Example:
  SELECT role, paused_at FROM pause_role('product_resync', reason := 'platform maintenance');
Idempotent: a paused role keeps when, by whom (paused_by, the session's user) and why it was first paused. An unknown role raises 22023.$$;

COMMIT;
