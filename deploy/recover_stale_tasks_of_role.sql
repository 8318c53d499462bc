-- Deploy taskpool:recover_stale_tasks_of_role to pg
-- requires: task_role_recoveries
-- requires: recover_stale_tasks
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- recover_stale_tasks_of_role
-- Recovers the stale tasks of one role as recover_stale_tasks does, at most once per half its stale_threshold.
--
-- For workers (taskpool_worker may call it): a deployment with neither pg_cron nor `pyworker
-- scheduler` has no tick, and a task whose worker died would stay running for ever. As seed
-- 002's reaper, each worker recovers its own role's tasks now and then. The rate limit is here,
-- in one row per role (task_role_recoveries): of a fleet of 100 workers calling, one recovers per
-- interval and the others return at once; one whose call finds the row locked (a recovery under
-- way) does not wait for it.
CREATE FUNCTION recover_stale_tasks_of_role(role text)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT recover_stale_tasks_of_role('product_resync');   -- 2, 0, or NULL: not its turn
-- Returns how many tasks it recovered, or NULL when a recovery of the role ran less than half
-- its stale_threshold ago (by taskpool_now(); one dated more than that ahead, the clock having
-- gone back, does not count) or is running now. An unknown role raises 22023.
DECLARE
    v_now       timestamptz := taskpool_now();
    v_threshold interval;
BEGIN
    SELECT r.stale_threshold INTO v_threshold FROM task_roles r WHERE r.role = recover_stale_tasks_of_role.role;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown role %L', recover_stale_tasks_of_role.role),
            HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
    END IF;

    PERFORM
    FROM task_role_recoveries rr
    WHERE rr.role = recover_stale_tasks_of_role.role
      -- A turn dated more than an interval ahead: the clock went back (set_taskpool_clock_offset).
      -- Less than that is a caller whose transaction began before the last turn's.
      AND (rr.last_run_at <= v_now - v_threshold / 2 OR rr.last_run_at > v_now + v_threshold / 2)
    FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        UPDATE task_role_recoveries rr SET last_run_at = v_now WHERE rr.role = recover_stale_tasks_of_role.role;
    ELSIF EXISTS (SELECT FROM task_role_recoveries rr WHERE rr.role = recover_stale_tasks_of_role.role) THEN
        RETURN NULL;
    ELSE
        -- The role's first recovery: of the callers racing to insert its row, one does.
        INSERT INTO task_role_recoveries AS rr (role, last_run_at)
        VALUES (recover_stale_tasks_of_role.role, v_now)
        ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
    END IF;
    RETURN _recover_stale_tasks(NULL, recover_stale_tasks_of_role.role);
END;
$$;

REVOKE ALL ON FUNCTION recover_stale_tasks_of_role(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION recover_stale_tasks_of_role(text) TO taskpool_worker;
COMMENT ON FUNCTION recover_stale_tasks_of_role(text) IS $$Recovers the stale tasks of one role as recover_stale_tasks does, at most once per half its stale_threshold.
Example:
  SELECT recover_stale_tasks_of_role('product_resync');   -- how many, or NULL: not its turn$$;

COMMIT;
