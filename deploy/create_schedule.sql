-- Deploy taskpool:create_schedule to pg
-- requires: _check_schedule
-- requires: _schedule_next_run_at

BEGIN;
SET client_min_messages = 'warning';

-- create_schedule
-- Adds a schedule, every so often (every or interval_hours) or on a cron expression; returns it.
CREATE FUNCTION create_schedule(
    name           text,
    role           text,
    kind           text        DEFAULT 'single',
    every          interval    DEFAULT NULL,
    cron           text        DEFAULT NULL,
    interval_hours integer     DEFAULT NULL,
    time_zone      text        DEFAULT 'UTC',
    payload        jsonb       DEFAULT '{}',
    state_code     text        DEFAULT NULL,
    priority       integer     DEFAULT 0,
    batches        integer     DEFAULT 6,
    planner        text        DEFAULT NULL,
    enabled        boolean     DEFAULT true,
    next_run_at    timestamptz DEFAULT NULL)
RETURNS task_schedules
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT next_run_at FROM create_schedule('hourly_report', 'analytics_refresh', every := '1 hour');
--   SELECT next_run_at FROM create_schedule('weekday_digest', 'analytics_refresh', cron := '0 7 * * mon-fri',
--                                          time_zone := 'Europe/Berlin');
--   SELECT next_run_at FROM create_schedule('quarter_hourly', 'analytics_refresh', every := '15 minutes');
-- Exactly one cadence: every, interval_hours or cron. Without next_run_at, an every schedule is
-- due at once, a day plan at today's local midnight (so the next tick plans today), a cron
-- schedule at its next slot. Each bad value is refused by name, and nothing is written.
DECLARE
    v_schedule task_schedules;
BEGIN
    IF num_nonnulls(create_schedule.every, create_schedule.cron, create_schedule.interval_hours) <> 1 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'a schedule runs on one cadence: give every, interval_hours or cron',
            HINT = 'e.g. every := ''15 minutes'', interval_hours := 4 or cron := ''0 3 * * *''.';
    END IF;
    IF create_schedule.interval_hours NOT BETWEEN 1 AND 8760 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('interval_hours %s is out of range', create_schedule.interval_hours),
            HINT = 'From 1 hour to 8760 (a year).';
    END IF;
    IF EXISTS (SELECT FROM task_schedules s WHERE s.name = create_schedule.name) THEN
        RAISE EXCEPTION USING
            ERRCODE = '23505',
            MESSAGE = format('schedule %L already exists', create_schedule.name),
            HINT = 'update_schedule changes it; delete_schedule removes it.';
    END IF;

    v_schedule.name := create_schedule.name;
    v_schedule.role := create_schedule.role;
    v_schedule.kind := create_schedule.kind;
    v_schedule.every := coalesce(create_schedule.every, make_interval(hours => create_schedule.interval_hours));
    v_schedule.cron := create_schedule.cron;
    v_schedule.time_zone := create_schedule.time_zone;
    v_schedule.payload := create_schedule.payload;
    v_schedule.state_code := create_schedule.state_code;
    v_schedule.priority := create_schedule.priority;
    v_schedule.batches := create_schedule.batches;
    v_schedule.planner := create_schedule.planner;
    v_schedule.enabled := coalesce(create_schedule.enabled, true);
    v_schedule.next_run_at := coalesce(create_schedule.next_run_at, taskpool_now());
    PERFORM _check_schedule(v_schedule);
    IF create_schedule.next_run_at IS NULL AND v_schedule.cron IS NOT NULL THEN
        v_schedule.next_run_at := cron_next_run(v_schedule.cron, taskpool_now(), v_schedule.time_zone);
    ELSIF create_schedule.next_run_at IS NULL AND v_schedule.kind = 'day_plan' THEN
        v_schedule.next_run_at := ((taskpool_now() AT TIME ZONE v_schedule.time_zone)::date)::timestamp
                                  AT TIME ZONE v_schedule.time_zone;
    END IF;

    INSERT INTO task_schedules (name, role, kind, every, cron, time_zone, payload, state_code, priority, batches,
                                planner, enabled, next_run_at)
    VALUES (v_schedule.name, v_schedule.role, v_schedule.kind, v_schedule.every, v_schedule.cron, v_schedule.time_zone,
            v_schedule.payload, v_schedule.state_code, v_schedule.priority, v_schedule.batches, v_schedule.planner,
            v_schedule.enabled, v_schedule.next_run_at)
    RETURNING * INTO v_schedule;
    RETURN v_schedule;
END;
$$;

REVOKE ALL ON FUNCTION create_schedule(text, text, text, interval, text, integer, text, jsonb, text, integer, integer, text, boolean, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION create_schedule(text, text, text, interval, text, integer, text, jsonb, text, integer, integer, text, boolean, timestamptz) IS $$Adds a schedule of a role, every so often (every or interval_hours) or on a five-field cron expression in its time zone; returns it.
Example:
  SELECT next_run_at FROM create_schedule('quarter_hourly', 'analytics_refresh', every := '15 minutes');
  SELECT next_run_at FROM create_schedule('weekday_digest', 'analytics_refresh', cron := '0 7 * * mon-fri', time_zone := 'Europe/Berlin');$$;

COMMIT;
