-- Deploy taskpool:_schedule_next_run_at to pg
-- requires: _schedule_next_run_at@v0.5.0
-- requires: task_schedules_day_plan
-- requires: task_schedules_cadence
-- requires: cron_next_run

BEGIN;
SET client_min_messages = 'warning';

-- _schedule_next_run_at
-- The first slot of a schedule's cadence strictly after a time: what next_run_at moves on to.
CREATE OR REPLACE FUNCTION _schedule_next_run_at(schedule task_schedules, later_than timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
AS $$
-- Example:
--   SELECT _schedule_next_run_at(s, taskpool_now()) FROM task_schedules s WHERE s.name = 'daily_resync_plan';
-- A cron schedule's next slot is cron_next_run's: wall-clock slots in its time_zone. Otherwise
-- slots are counted from the schedule's next_run_at, so a late tick neither drifts nor fires a
-- backlog, and a schedule steps by `every`, elapsed time. A day plan plans one local day, so it
-- steps by local days instead (every in days, rounded up, at least one) and runs at local
-- midnight in its time_zone: counting hours would put it at 23:00 or 01:00 after a
-- daylight-saving change, planning a day whose slots are past (every store at once) or late.
-- Raises what the time arithmetic raises (an unknown time zone, an infinite time): the tick
-- records that as the schedule's error.
DECLARE
    v_anchor_day   date;
    v_step_days    integer;
    v_step_seconds double precision := extract(epoch FROM schedule.every);
BEGIN
    IF schedule.cron IS NOT NULL THEN
        RETURN cron_next_run(schedule.cron, later_than, schedule.time_zone);
    END IF;
    IF schedule.kind = 'day_plan' THEN
        v_anchor_day := (schedule.next_run_at AT TIME ZONE schedule.time_zone)::date;
        v_step_days := greatest(ceil(v_step_seconds / 86400), 1)::integer;
        RETURN (v_anchor_day
                + v_step_days * (floor(((later_than AT TIME ZONE schedule.time_zone)::date - v_anchor_day)::numeric
                                       / v_step_days)::integer + 1)
               )::timestamp AT TIME ZONE schedule.time_zone;
    END IF;
    RETURN schedule.next_run_at
           + make_interval(secs => v_step_seconds
                                   * (floor(extract(epoch FROM later_than - schedule.next_run_at) / v_step_seconds) + 1));
END;
$$;

REVOKE ALL ON FUNCTION _schedule_next_run_at(task_schedules, timestamptz) FROM PUBLIC;

COMMIT;
