-- Deploy taskpool:task_schedules_cadence to pg
-- requires: task_schedules_day_plan
-- requires: cron_next_run

BEGIN;
SET client_min_messages = 'warning';

-- A schedule runs on a cron expression or every so often, as short as a minute: `cron` or
-- `every`, exactly one. interval_hours stays as it was for whoever reads or writes it: writing it
-- sets `every`, and it reads as `every` in whole hours (NULL for a cron schedule or a sub-hour one).
ALTER TABLE task_schedules
    ADD COLUMN every interval,
    ADD COLUMN cron text,
    ALTER COLUMN interval_hours DROP NOT NULL;

UPDATE task_schedules SET every = make_interval(hours => interval_hours);

ALTER TABLE task_schedules
    ADD CONSTRAINT task_schedules_one_cadence CHECK (num_nonnulls(every, cron) = 1),
    -- Elapsed time: months and years have no fixed length.
    ADD CONSTRAINT task_schedules_every_in_range
        CHECK (every BETWEEN interval '1 minute' AND interval '365 days'
               AND date_part('month', every) = 0 AND date_part('year', every) = 0),
    -- _cron_parse raises the error that names what is wrong with the expression.
    ADD CONSTRAINT task_schedules_cron_parses CHECK (cardinality((_cron_parse(cron)).minutes) > 0);

-- tg_task_schedules__cadence
-- Keeps interval_hours and every in step: writing interval_hours (1..8760) sets every.
CREATE FUNCTION tg_task_schedules__cadence()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    v_hours_written boolean := NEW.interval_hours IS NOT NULL
                               AND (TG_OP = 'INSERT' OR NEW.interval_hours IS DISTINCT FROM OLD.interval_hours);
BEGIN
    IF v_hours_written AND NEW.interval_hours NOT BETWEEN 1 AND 8760 THEN
        RETURN NEW;  -- for task_schedules_interval_hours_in_range to name
    END IF;
    IF v_hours_written AND (CASE TG_OP WHEN 'INSERT' THEN NEW.every IS NULL AND NEW.cron IS NULL
                                       ELSE NEW.every IS NOT DISTINCT FROM OLD.every END) THEN
        NEW.every := make_interval(hours => NEW.interval_hours);
        NEW.cron := NULL;
    END IF;
    NEW.interval_hours := CASE WHEN extract(epoch FROM NEW.every) % 3600 = 0
                               THEN (extract(epoch FROM NEW.every) / 3600)::integer END;
    RETURN NEW;
END;
$$;

REVOKE ALL ON FUNCTION tg_task_schedules__cadence() FROM PUBLIC;

CREATE TRIGGER _050_cadence
    BEFORE INSERT OR UPDATE ON task_schedules
    FOR EACH ROW EXECUTE FUNCTION tg_task_schedules__cadence();

COMMENT ON COLUMN task_schedules.every IS
    'Run every so often (1 minute to 365 days, elapsed time), counted from next_run_at; NULL for a cron schedule.';
COMMENT ON COLUMN task_schedules.cron IS
    'Run at the slots of this five-field cron expression (as pg_cron reads it, or @hourly, @daily, ...), '
    'wall-clock times in time_zone; NULL for an every schedule.';
COMMENT ON COLUMN task_schedules.interval_hours IS
    'every in whole hours, NULL when it is not (a cron or sub-hour schedule); writing it sets every.';
COMMENT ON COLUMN task_schedules.kind IS
    'single: one task of the role (payload, plus state_code when set); '
    'per_store: one task per active store (of state_code when set) that has no active task of the role, '
    'due an interval after its last completed one, the overdue stores spread evenly over the interval; '
    'day_plan: planner(schedule, today in time_zone), at local midnight, every ceil(every / 1 day) days.';
COMMENT ON COLUMN task_schedules.next_run_at IS
    'Due at or after this time. A run moves it on to the next cron slot, or by every from its previous value, '
    'skipping slots already past, so a late tick neither drifts nor fires a backlog.';
COMMENT ON COLUMN task_schedules.last_error IS
    'The error of the last run, NULL when it succeeded. A failed run is retried after least(every, 10 minutes), '
    'or at the next cron slot when that comes sooner.';

COMMIT;
