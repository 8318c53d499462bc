-- Deploy taskpool:task_throughput to pg
-- requires: worker_task_attempts_ended_at_idx
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- task_throughput
-- Per role and hour, the last N hours: the tasks completed and the attempts that failed, for a
-- chart of the recent past (the dashboard's overview). Hours with nothing in them are rows of 0.
CREATE FUNCTION task_throughput(hours integer DEFAULT 12)
RETURNS TABLE (hour timestamptz, role text, completed bigint, failed_attempts bigint)
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_now  timestamptz := taskpool_now();
    v_from timestamptz;
BEGIN
    IF hours IS NULL OR hours NOT BETWEEN 1 AND 168 THEN
        RAISE EXCEPTION 'hours must be 1..168, not %', coalesce(hours::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    -- The current hour is the last slot, partly over.
    v_from := date_trunc('hour', v_now) - make_interval(hours => hours - 1);
    RETURN QUERY
    WITH slots AS (
        SELECT s.hour, r.role
        FROM generate_series(v_from, date_trunc('hour', v_now), interval '1 hour') AS s(hour)
        CROSS JOIN task_roles r
    ),
    done AS (
        -- worker_tasks_finished_idx serves the range on completed_at
        SELECT date_trunc('hour', t.completed_at) AS hour, t.role, count(*) AS tasks
        FROM worker_tasks t
        WHERE t.status = 'completed'
          AND t.completed_at >= v_from AND t.completed_at <= v_now
        GROUP BY 1, 2
    ),
    failed AS (
        SELECT date_trunc('hour', a.ended_at) AS hour, t.role, count(*) AS attempts
        FROM worker_task_attempts a
        JOIN worker_tasks t ON t.id = a.task_id
        WHERE a.outcome IN ('retried', 'failed') AND a.ended_at >= v_from AND a.ended_at <= v_now
        GROUP BY 1, 2
    )
    SELECT s.hour, s.role, coalesce(d.tasks, 0), coalesce(f.attempts, 0)
    FROM slots s
    LEFT JOIN done d ON d.hour = s.hour AND d.role = s.role
    LEFT JOIN failed f ON f.hour = s.hour AND f.role = s.role
    ORDER BY s.hour, s.role;
END;
$$;

REVOKE ALL ON FUNCTION task_throughput(integer) FROM PUBLIC;

COMMENT ON FUNCTION task_throughput(integer) IS $$Per role and hour over the last N hours (1..168, the current hour last and partly over): the tasks completed and the attempts that failed (retried or failed for good).
Example:
  SELECT hour, role, completed, failed_attempts FROM task_throughput(12);$$;

COMMIT;
