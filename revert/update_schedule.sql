-- Revert taskpool:update_schedule from pg: back to the v0.5.0 body, which ran resync_plan schedules

BEGIN;
SET client_min_messages = 'warning';

DROP FUNCTION update_schedule(text, boolean, integer, integer, jsonb, text, text, text, interval, text, text, integer, timestamptz);

-- update_schedule
-- Enables or disables a schedule, or changes its interval or priority; returns it.
CREATE FUNCTION update_schedule(
    name           text,
    enabled        boolean DEFAULT NULL,
    interval_hours integer DEFAULT NULL,
    priority       integer DEFAULT NULL)
RETURNS task_schedules
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT name, enabled, next_run_at FROM update_schedule('analytics_refresh', interval_hours := 12);
--   SELECT enabled FROM update_schedule('store_discovery', enabled := false);
-- Omitted arguments keep their value. A new interval counts from the last run (or now, if it
-- never ran), never earlier than now. A resync plan, which runs at local midnight, goes to the
-- first local midnight of its new cadence after now instead.
DECLARE
    v_schedule task_schedules := _lock_schedule(update_schedule.name);
    v_changed  task_schedules;
BEGIN
    IF update_schedule.interval_hours NOT BETWEEN 1 AND 8760 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('interval_hours %s is out of range', update_schedule.interval_hours),
            HINT = 'From 1 hour to 8760 (a year).';
    END IF;
    IF update_schedule.priority NOT BETWEEN -100 AND 100 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22003',
            MESSAGE = format('priority %s is out of range', update_schedule.priority),
            HINT = 'Priorities go from -100 to 100; higher runs first.';
    END IF;

    v_changed := v_schedule;
    v_changed.interval_hours := coalesce(update_schedule.interval_hours, v_schedule.interval_hours);
    IF v_changed.interval_hours <> v_schedule.interval_hours THEN
        v_changed.next_run_at := CASE
            WHEN v_schedule.kind = 'resync_plan' THEN _schedule_next_run_at(v_changed, taskpool_now())
            ELSE greatest(taskpool_now(),
                          coalesce(v_schedule.last_run_at, taskpool_now())
                          + make_interval(hours => v_changed.interval_hours))
        END;
    END IF;

    UPDATE task_schedules s
    SET enabled = coalesce(update_schedule.enabled, s.enabled),
        priority = coalesce(update_schedule.priority, s.priority),
        interval_hours = v_changed.interval_hours,
        next_run_at = v_changed.next_run_at
    WHERE s.id = v_schedule.id
    RETURNING s.* INTO v_schedule;
    RETURN v_schedule;
END;
$$;

REVOKE ALL ON FUNCTION update_schedule(text, boolean, integer, integer) FROM PUBLIC;
COMMENT ON FUNCTION update_schedule(text, boolean, integer, integer) IS $$Enables or disables a schedule, or changes its interval or priority; returns it.
Example:
  SELECT name, enabled, next_run_at FROM update_schedule('analytics_refresh', interval_hours := 12);
  SELECT enabled FROM update_schedule('store_discovery', enabled := false);$$;

COMMIT;
