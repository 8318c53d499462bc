-- Deploy taskpool:update_schedule to pg
-- requires: update_schedule@v0.5.0
-- requires: task_schedules_day_plan
-- requires: _check_schedule
-- requires: _schedule_next_run_at

BEGIN;
SET client_min_messages = 'warning';

-- Every field of a schedule can be changed now: the four-argument form gives way to one that
-- takes them all, with the same first four, so calls by position or by name still work.
DROP FUNCTION update_schedule(text, boolean, integer, integer);

-- update_schedule
-- Changes any field of a schedule (omitted ones keep their value); returns it.
CREATE FUNCTION update_schedule(
    name           text,
    enabled        boolean     DEFAULT NULL,
    interval_hours integer     DEFAULT NULL,
    priority       integer     DEFAULT NULL,
    payload        jsonb       DEFAULT NULL,
    state_code     text        DEFAULT NULL,
    kind           text        DEFAULT NULL,
    planner        text        DEFAULT NULL,
    every          interval    DEFAULT NULL,
    cron           text        DEFAULT NULL,
    time_zone      text        DEFAULT NULL,
    batches        integer     DEFAULT NULL,
    next_run_at    timestamptz DEFAULT NULL)
RETURNS task_schedules
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT name, enabled, next_run_at FROM update_schedule('analytics_refresh', interval_hours := 12);
--   SELECT enabled FROM update_schedule('store_discovery', enabled := false);
--   SELECT next_run_at FROM update_schedule('analytics_refresh', cron := '*/30 * * * *', time_zone := 'Europe/Berlin');
-- One cadence at a time: giving cron drops every, giving every (or interval_hours) drops cron.
-- state_code := '' clears the state; a kind other than day_plan drops the planner. Unless
-- next_run_at is given, a new cadence or time zone moves the next run: an interval counts from
-- the last run (or now, if it never ran), never earlier than now; a cron schedule goes to its
-- next slot after now; a day plan to the first local midnight of its new cadence after now.
-- Each bad value is refused by name, and nothing changes.
DECLARE
    v_schedule task_schedules := _lock_schedule(update_schedule.name);
    v_changed  task_schedules;
BEGIN
    IF num_nonnulls(update_schedule.every, update_schedule.cron, update_schedule.interval_hours) > 1 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'a schedule runs on one cadence: give every, interval_hours or cron, not several';
    END IF;
    IF update_schedule.interval_hours NOT BETWEEN 1 AND 8760 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('interval_hours %s is out of range', update_schedule.interval_hours),
            HINT = 'From 1 hour to 8760 (a year).';
    END IF;

    v_changed := v_schedule;
    v_changed.enabled := coalesce(update_schedule.enabled, v_schedule.enabled);
    v_changed.priority := coalesce(update_schedule.priority, v_schedule.priority);
    v_changed.payload := coalesce(update_schedule.payload, v_schedule.payload);
    v_changed.state_code := CASE WHEN update_schedule.state_code = '' THEN NULL
                                 ELSE coalesce(update_schedule.state_code, v_schedule.state_code) END;
    v_changed.kind := coalesce(update_schedule.kind, v_schedule.kind);
    v_changed.planner := CASE WHEN v_changed.kind <> 'day_plan' AND update_schedule.planner IS NULL THEN NULL
                              ELSE coalesce(update_schedule.planner, v_schedule.planner) END;
    v_changed.time_zone := coalesce(update_schedule.time_zone, v_schedule.time_zone);
    v_changed.batches := coalesce(update_schedule.batches, v_schedule.batches);
    IF update_schedule.cron IS NOT NULL THEN
        v_changed.cron := update_schedule.cron;
        v_changed.every := NULL;
    ELSIF num_nonnulls(update_schedule.every, update_schedule.interval_hours) = 1 THEN
        v_changed.every := coalesce(update_schedule.every, make_interval(hours => update_schedule.interval_hours));
        v_changed.cron := NULL;
    END IF;
    v_changed.next_run_at := coalesce(update_schedule.next_run_at, v_schedule.next_run_at);
    PERFORM _check_schedule(v_changed);

    IF update_schedule.next_run_at IS NULL
       AND (v_changed.every IS DISTINCT FROM v_schedule.every OR v_changed.cron IS DISTINCT FROM v_schedule.cron
            OR v_changed.time_zone <> v_schedule.time_zone OR v_changed.kind <> v_schedule.kind) THEN
        v_changed.next_run_at := CASE
            WHEN v_changed.cron IS NOT NULL OR v_changed.kind = 'day_plan' THEN _schedule_next_run_at(v_changed, taskpool_now())
            ELSE greatest(taskpool_now(), coalesce(v_schedule.last_run_at, taskpool_now()) + v_changed.every)
        END;
    END IF;

    UPDATE task_schedules s
    SET enabled = v_changed.enabled,
        priority = v_changed.priority,
        payload = v_changed.payload,
        state_code = v_changed.state_code,
        kind = v_changed.kind,
        planner = v_changed.planner,
        every = v_changed.every,
        cron = v_changed.cron,
        time_zone = v_changed.time_zone,
        batches = v_changed.batches,
        next_run_at = v_changed.next_run_at
    WHERE s.id = v_schedule.id
    RETURNING s.* INTO v_schedule;
    RETURN v_schedule;
END;
$$;

REVOKE ALL ON FUNCTION update_schedule(text, boolean, integer, integer, jsonb, text, text, text, interval, text, text, integer, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION update_schedule(text, boolean, integer, integer, jsonb, text, text, text, interval, text, text, integer, timestamptz) IS $$Changes any field of a schedule (enabled, interval_hours, priority, payload, state_code, kind, planner, every, cron, time_zone, batches, next_run_at); omitted ones keep their value; returns it.
Example:
  SELECT name, enabled, next_run_at FROM update_schedule('analytics_refresh', interval_hours := 12);
  SELECT enabled FROM update_schedule('store_discovery', enabled := false);
  SELECT next_run_at FROM update_schedule('analytics_refresh', cron := '*/30 * * * *', time_zone := 'Europe/Berlin');$$;

COMMIT;
