-- Deploy taskpool:resume_role to pg
-- requires: task_roles_paused
-- requires: _wake_waiting_workers

BEGIN;
SET client_min_messages = 'warning';

-- resume_role
-- Resumes a paused role: its ready tasks are handed out again; returns the role's row.
CREATE FUNCTION resume_role(role text)
RETURNS task_roles
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT role, paused_at FROM resume_role('product_resync');
-- Resuming a role that is not paused changes nothing. The workers that wait for the role are
-- woken at commit, one per ready task (up to 1000), rather than at their next poll.
DECLARE
    v_role  task_roles;
    v_ready bigint;
BEGIN
    IF resume_role.role IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'role is required';
    END IF;

    UPDATE task_roles r
    SET paused_at = NULL, paused_by = NULL, pause_reason = NULL
    WHERE r.role = resume_role.role AND r.paused_at IS NOT NULL
    RETURNING r.* INTO v_role;
    IF FOUND THEN
        SELECT count(*) INTO v_ready
        FROM (SELECT FROM worker_tasks t
              WHERE t.role = resume_role.role AND t.status = 'pending' AND t.scheduled_for <= taskpool_now()
              LIMIT 1000) AS ready;
        IF v_ready > 0 THEN
            PERFORM _wake_waiting_workers(resume_role.role, v_ready);
        END IF;
        RETURN v_role;
    END IF;

    SELECT r.* INTO v_role FROM task_roles r WHERE r.role = resume_role.role;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown role %L', resume_role.role),
            HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
    END IF;
    RETURN v_role;
END;
$$;

REVOKE ALL ON FUNCTION resume_role(text) FROM PUBLIC;
COMMENT ON FUNCTION resume_role(text) IS $$Resumes a paused role: its ready tasks are handed out again, and the workers waiting for it are woken. Returns the role's row.
Example:
  SELECT role, paused_at FROM resume_role('product_resync');
Idempotent: a role that is not paused is left as it is. An unknown role raises 22023.$$;

COMMIT;
