-- Deploy taskpool:task_slots_wanted to pg
-- requires: v_worker_capacity
-- requires: taskpool_worker
-- requires: task_roles_paused

BEGIN;
SET client_min_messages = 'warning';

-- task_slots_wanted
-- How many of a role's tasks its workers should be able to run at once: the one number an autoscaler reads.
CREATE FUNCTION task_slots_wanted(role text, drain_hours numeric DEFAULT 1)
RETURNS integer
LANGUAGE plpgsql
STABLE
-- An autoscaler reads it with the workers' login: taskpool_worker may execute it, and it reads
-- the capacity view as the owner.
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT task_slots_wanted('product_resync', 1);   -- 12: twelve tasks at once drain the ready ones in an hour
-- A slot runs one task at a time, as v_worker_capacity's workers do: a worker process with
-- --concurrency N is N slots, so an autoscaler divides by N (KEDA: targetQueryValue = N).
-- From v_worker_capacity's figures:
--   no ready task, or the role paused (pause_role: its ready tasks wait for a resume, not for
--     more workers): the running tasks' slots, so that no busy worker is scaled away;
--   ready tasks and a known rate: ceil(ready / (tasks_per_worker_hour * drain_hours)), the view's
--     workers-needed formula over the tasks that can run now (pending ones scheduled later, a
--     day's resync plan, need no worker yet), and never fewer than the running tasks;
--   ready tasks and no completion in the last hour (rate unknown): one slot more than are busy,
--     so a fleet grows a worker at a time, each once the last one is busy, until a completion
--     gives the rate.
DECLARE
    v_ready   bigint;
    v_running bigint;
    v_rate    numeric;
    v_paused  boolean;
BEGIN
    IF task_slots_wanted.drain_hours IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22004',
            MESSAGE = 'drain_hours is required',
            HINT = 'The hours the ready tasks should take to drain, e.g. 1.';
    END IF;
    IF task_slots_wanted.drain_hours <= 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('drain_hours must be positive, not %s', task_slots_wanted.drain_hours);
    END IF;
    -- These four columns alone: the planner then leaves out the view's joins that feed none of
    -- them (workers seen, failures, arrivals), a quarter of the time with 30,000 recent tasks.
    SELECT c.ready_tasks, c.running_tasks, c.tasks_per_worker_hour, c.paused
    INTO v_ready, v_running, v_rate, v_paused
    FROM v_worker_capacity c
    WHERE c.role = task_slots_wanted.role;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown role %L', task_slots_wanted.role),
            HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
    END IF;
    IF v_ready = 0 OR v_paused THEN
        RETURN v_running;
    END IF;
    -- 0 too: a rate below 0.05 a slot-hour rounds to 0.0 in the view
    IF coalesce(v_rate, 0) = 0 THEN
        RETURN v_running + 1;
    END IF;
    RETURN greatest(ceil(v_ready / (v_rate * task_slots_wanted.drain_hours))::integer, v_running);
END;
$$;

REVOKE ALL ON FUNCTION task_slots_wanted(text, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION task_slots_wanted(text, numeric) TO taskpool_worker;

COMMENT ON FUNCTION task_slots_wanted(text, numeric) IS $$How many of a role's tasks its workers should be able to run at once to drain the ready ones in drain_hours (default 1): the one number an autoscaler reads.
Example:
  SELECT task_slots_wanted('product_resync', 1);
A slot runs one task at a time: a worker with --concurrency N is N slots. No ready task, or the role paused: the running tasks. A known rate (a completion in the last hour): ceil(ready / (tasks_per_worker_hour * drain_hours)), at least the running tasks. An unknown rate: the running tasks + 1. Never NULL; 22023 for an unknown role or drain_hours <= 0.$$;

COMMIT;
