-- Deploy taskpool:_run_schedule to pg
-- requires: _run_schedule@v0.5.0
-- requires: task_schedules_day_plan
-- requires: task_schedules_cadence
-- requires: cron_next_run

BEGIN;
SET client_min_messages = 'warning';

-- _run_schedule
-- Makes one schedule's tasks now, by its kind; returns how many it created (errors propagate).
CREATE OR REPLACE FUNCTION _run_schedule(schedule task_schedules)
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    v_count   integer;
    v_planner regprocedure;
    v_window  interval;
BEGIN
    CASE schedule.kind
    WHEN 'single' THEN
        -- Through the enqueue checks: a payload the role refuses fails the run, named in last_error.
        SELECT count(*) INTO v_count
        FROM _enqueue_specs(jsonb_build_array(jsonb_build_object(
                 'role', schedule.role,
                 'priority', schedule.priority,
                 'payload', schedule.payload
                     || CASE WHEN schedule.state_code IS NULL THEN '{}'::jsonb
                             ELSE jsonb_build_object('state_code', schedule.state_code) END)),
             NULL);
    WHEN 'per_store' THEN
        -- Inserted as a set, so the one check of enqueue that can fail here is made by hand.
        IF octet_length(schedule.payload::text) > (SELECT r.max_payload_bytes FROM task_roles r WHERE r.role = schedule.role) THEN
            RAISE EXCEPTION USING
                ERRCODE = '54000',
                MESSAGE = format('payload is %s bytes; role %s allows at most %s', octet_length(schedule.payload::text),
                                 schedule.role, (SELECT r.max_payload_bytes FROM task_roles r WHERE r.role = schedule.role));
        END IF;
        -- Each store is due an interval after its last completed task of the role; a store with
        -- none in the last interval is overdue, and the overdue ones are dealt evenly over the
        -- interval in id order, so that a run makes no thundering herd. A cron schedule's
        -- interval is the time to its next slot.
        v_window := coalesce(schedule.every, cron_next_run(schedule.cron, taskpool_now(), schedule.time_zone) - taskpool_now());
        WITH last_completed AS (
            SELECT t.dispensary_id, max(t.completed_at) AS completed_at
            FROM worker_tasks t
            WHERE t.status = 'completed' AND t.completed_at > taskpool_now() - v_window AND t.role = schedule.role
            GROUP BY t.dispensary_id
        ), needing AS (
            SELECT d.id, d.platform, l.completed_at + v_window AS due_at
            FROM dispensaries d
            LEFT JOIN last_completed l ON l.dispensary_id = d.id
            WHERE d.active
              AND (schedule.state_code IS NULL OR d.state_code = schedule.state_code)
              AND NOT EXISTS (SELECT FROM worker_tasks t
                              WHERE t.dispensary_id = d.id AND t.role = schedule.role
                                AND t.status IN ('pending', 'claimed', 'running'))
        ), created AS (
            INSERT INTO worker_tasks (role, dispensary_id, platform, priority, max_retries, payload, scheduled_for)
            SELECT schedule.role, n.id, n.platform, schedule.priority, r.max_retries, schedule.payload,
                   coalesce(n.due_at,
                            taskpool_now() + v_window * ((row_number() OVER overdue - 1)::double precision
                                                         / count(*) OVER overdue))
            FROM needing n
            CROSS JOIN task_roles r
            WHERE r.role = schedule.role
            WINDOW overdue AS (PARTITION BY n.due_at IS NULL ORDER BY n.id
                               ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
            ORDER BY n.id
            RETURNING 1
        )
        SELECT count(*) INTO v_count FROM created;
    WHEN 'day_plan' THEN
        v_planner := to_regprocedure(schedule.planner || '(task_schedules, date)');
        IF v_planner IS NULL OR (SELECT p.prorettype FROM pg_proc p WHERE p.oid = v_planner) <> 'integer'::regtype THEN
            RAISE EXCEPTION USING
                ERRCODE = '22023',
                MESSAGE = format('planner %s(task_schedules, date) returning integer does not exist', schedule.planner),
                HINT = 'A day_plan schedule names a function planner(schedule task_schedules, day date) that returns the number of tasks it made.';
        END IF;
        EXECUTE (SELECT format('SELECT %I.%I($1, $2)', n.nspname, p.proname)
                 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = v_planner)
        INTO v_count
        USING schedule, (taskpool_now() AT TIME ZONE schedule.time_zone)::date;
    END CASE;
    RETURN v_count;
END;
$$;

REVOKE ALL ON FUNCTION _run_schedule(task_schedules) FROM PUBLIC;

COMMIT;
