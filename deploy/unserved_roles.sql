-- Deploy taskpool:unserved_roles to pg
-- requires: task_roles_paused
-- requires: task_worker_roles
-- requires: task_workers
-- requires: worker_tasks
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- unserved_roles
-- The roles whose ready tasks have waited longer than min_wait with no live worker to take them: the commonest outage.
CREATE FUNCTION unserved_roles(min_wait interval DEFAULT interval '5 minutes')
RETURNS TABLE (role text, ready_tasks bigint, oldest_ready_age interval, last_worker_seen_at timestamptz)
LANGUAGE plpgsql
STABLE
AS $$
-- Example:
--   SELECT * FROM unserved_roles();   -- store_discovery | 32 | 00:08:00 | (NULL: no worker ever)
-- A live worker is one registered for the role and seen in the last 2 minutes, busy or idle
-- (v_worker_capacity's active_workers): workers heartbeat every 30 s by default. A paused role
-- is not listed: its tasks wait for resume_role, not for a worker. min_wait (default 5 minutes)
-- leaves a worker that is starting, or restarting, the time to register.
-- last_worker_seen_at: when a worker of the role was last seen, NULL when none is registered.
DECLARE
    v_now  timestamptz := taskpool_now();
BEGIN
    IF unserved_roles.min_wait IS NULL OR unserved_roles.min_wait < interval '0' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('min_wait must be an interval of 0 or more, not %s',
                             coalesce(unserved_roles.min_wait::text, 'NULL'));
    END IF;
    RETURN QUERY
    WITH ready AS (
        SELECT t.role, count(*) AS ready_tasks, v_now - min(t.scheduled_for) AS oldest_ready_age
        FROM worker_tasks t
        WHERE t.status = 'pending' AND t.scheduled_for <= v_now
        GROUP BY t.role
    )
    SELECT r.role, r.ready_tasks, r.oldest_ready_age, seen.last_seen_at
    FROM ready r
    JOIN task_roles tr ON tr.role = r.role
    CROSS JOIN LATERAL (
        SELECT max(w.last_seen_at) AS last_seen_at
        FROM task_worker_roles wr
        JOIN task_workers w ON w.worker_id = wr.worker_id
        WHERE wr.role = r.role
    ) seen
    WHERE tr.paused_at IS NULL
      AND r.oldest_ready_age > unserved_roles.min_wait
      AND (seen.last_seen_at IS NULL OR seen.last_seen_at <= v_now - interval '2 minutes')
    ORDER BY r.oldest_ready_age DESC, r.role;
END;
$$;

REVOKE ALL ON FUNCTION unserved_roles(interval) FROM PUBLIC;

COMMENT ON FUNCTION unserved_roles(interval) IS $$The roles whose ready tasks have waited longer than min_wait (default 5 minutes) with no live worker to take them: the commonest outage.
Example:
  SELECT * FROM unserved_roles();
  SELECT role, ready_tasks, oldest_ready_age FROM unserved_roles('15 minutes');
A live worker is registered for the role and was seen in the last 2 minutes (as v_worker_capacity's active_workers). Paused roles are not listed. last_worker_seen_at is NULL when no worker of the role is registered. taskpool_health() reports it (unserved_roles), taskpool_metrics() as taskpool_role_unserved.$$;

COMMIT;
