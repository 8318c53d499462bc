-- Deploy taskpool:remove_role to pg
-- requires: task_roles
-- requires: worker_tasks
-- requires: task_schedules
-- requires: task_worker_roles
-- requires: task_worker_waits
-- requires: v_workers

BEGIN;
SET client_min_messages = 'warning';

-- remove_role
-- Removes a role with its finished tasks, schedules and chains; refuses while it has live tasks or live workers, unless forced. Returns the role's row.
CREATE FUNCTION remove_role(role text, force boolean DEFAULT false)
RETURNS task_roles
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT role FROM remove_role('send_welcome');
--   SELECT role FROM remove_role('send_welcome', force := true);   -- its live tasks go too
-- Live: a task pending, claimed or running; a worker serving the role and heard from within its
-- stale_threshold (v_workers.liveness). Refused (55000) while there is one, unless force: then
-- they go with the rest, and a live worker of the role fails its next call. What goes with the
-- role: its tasks and their attempts, its schedules, the registrations of its workers (a silent
-- worker's row), its chains and recoveries. task_metric_totals keeps its counters: the history
-- of a role outlives the role.
DECLARE
    v_role         task_roles;
    v_live_tasks   bigint;
    v_live_workers text[];
BEGIN
    IF remove_role.role IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'role is required';
    END IF;
    SELECT r.* INTO v_role FROM task_roles r WHERE r.role = remove_role.role FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown role %L', remove_role.role),
            HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
    END IF;

    SELECT count(*) INTO v_live_tasks
    FROM worker_tasks t
    WHERE t.role = remove_role.role AND t.status IN ('pending', 'claimed', 'running');
    SELECT array_agg(w.worker_id ORDER BY w.worker_id) INTO v_live_workers
    FROM v_workers w
    WHERE remove_role.role = ANY (w.roles) AND w.liveness = 'live';
    IF NOT coalesce(remove_role.force, false) AND (v_live_tasks > 0 OR v_live_workers IS NOT NULL) THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('role %L has %s live tasks and %s live workers%s', remove_role.role, v_live_tasks,
                             coalesce(cardinality(v_live_workers), 0),
                             coalesce(' (' || array_to_string(v_live_workers, ', ') || ')', '')),
            HINT = 'Cancel its tasks and stop its workers first, or pass force := true to remove them with the role.';
    END IF;

    DELETE FROM task_worker_waits ww WHERE ww.role = remove_role.role;
    DELETE FROM task_worker_roles wr WHERE wr.role = remove_role.role;
    DELETE FROM task_workers w WHERE w.role = remove_role.role;
    DELETE FROM task_schedules s WHERE s.role = remove_role.role;
    DELETE FROM worker_tasks t WHERE t.role = remove_role.role;
    DELETE FROM task_roles r WHERE r.role = remove_role.role;
    RETURN v_role;
END;
$$;

REVOKE ALL ON FUNCTION remove_role(text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION remove_role(text, boolean) IS $$Removes a role with its finished tasks, schedules and chains; refuses while it has live tasks or live workers, unless forced. Returns the role's row.
Example:
  SELECT role FROM remove_role('send_welcome');
Live: a task pending, claimed or running, a worker heard from within the role's stale_threshold: 55000 naming them, unless force := true removes them too. An unknown role raises 22023. task_metric_totals keeps the role's counters. An operator's function (pyworker roles sync --remove-missing), not the workers'.$$;

COMMIT;
