-- Deploy taskpool:_check_schedule to pg
-- requires: task_schedules_cadence

BEGIN;
SET client_min_messages = 'warning';

-- _check_schedule
-- Raises, naming the field and what it may be, for the first value of a schedule that cannot stand.
CREATE FUNCTION _check_schedule(schedule task_schedules)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
-- Example:
--   SELECT _check_schedule(s) FROM task_schedules s;
-- create_schedule and update_schedule call it before they write, so that a bad value gets its
-- own message rather than a CHECK constraint's name, and a planner or time zone that does not
-- exist is refused now rather than at the tick.
BEGIN
    IF schedule.name IS NULL OR btrim(schedule.name) = '' OR length(schedule.name) > 100 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'a schedule name is required (1 to 100 characters, not blank)';
    END IF;
    IF NOT EXISTS (SELECT FROM task_roles r WHERE r.role = schedule.role) THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002',
            MESSAGE = format('role %L does not exist', schedule.role),
            HINT = 'Roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
    END IF;
    IF schedule.kind IS NULL OR schedule.kind NOT IN ('single', 'per_store', 'day_plan') THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('kind %L is not single, per_store or day_plan', schedule.kind);
    END IF;
    IF num_nonnulls(schedule.every, schedule.cron) <> 1 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'a schedule runs on one cadence: every (or interval_hours) or cron',
            HINT = 'Give exactly one of them.';
    END IF;
    IF NOT (schedule.every BETWEEN interval '1 minute' AND interval '365 days'
            AND date_part('month', schedule.every) = 0 AND date_part('year', schedule.every) = 0) THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('every %s is out of range', schedule.every),
            HINT = 'From 1 minute to 365 days, in minutes, hours or days (months and years have no fixed length).';
    END IF;
    PERFORM _cron_parse(schedule.cron) WHERE schedule.cron IS NOT NULL;
    IF schedule.time_zone IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'a time zone is required', HINT = 'UTC, or an IANA name such as Europe/Berlin.';
    END IF;
    PERFORM taskpool_now() AT TIME ZONE schedule.time_zone;
    IF schedule.priority IS NULL OR schedule.priority NOT BETWEEN -100 AND 100 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22003',
            MESSAGE = format('priority %s is out of range', coalesce(schedule.priority::text, 'NULL')),
            HINT = 'Priorities go from -100 to 100; higher runs first.';
    END IF;
    IF schedule.batches IS NULL OR schedule.batches NOT BETWEEN 1 AND 1440 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('batches %s is out of range', coalesce(schedule.batches::text, 'NULL')),
            HINT = 'From 1 to 1440.';
    END IF;
    IF schedule.state_code !~ '^[A-Z]{2}$' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('state code %L is not two capital letters', schedule.state_code);
    END IF;
    IF schedule.payload IS NULL OR jsonb_typeof(schedule.payload) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'a schedule''s payload must be a JSON object';
    END IF;
    IF (schedule.kind = 'day_plan') <> (schedule.planner IS NOT NULL) THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = CASE WHEN schedule.planner IS NULL THEN 'a day_plan schedule needs a planner'
                           ELSE format('a %s schedule has no planner', schedule.kind) END,
            HINT = 'A day_plan schedule names a function planner(schedule task_schedules, day date) returning integer.';
    END IF;
    IF schedule.planner !~ '^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('planner %L is not a function name', schedule.planner),
            HINT = 'A lower-case name, schema-qualified or not, such as plan_reports or reports.plan_day.';
    END IF;
    IF schedule.planner IS NOT NULL
       AND (SELECT p.prorettype FROM pg_proc p
            WHERE p.oid = to_regprocedure(schedule.planner || '(task_schedules, date)')) IS DISTINCT FROM 'integer'::regtype THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('planner %s(task_schedules, date) returning integer does not exist', schedule.planner),
            HINT = 'A day_plan schedule names a function planner(schedule task_schedules, day date) that returns the number of tasks it made.';
    END IF;
    IF NOT isfinite(schedule.next_run_at) THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('next_run_at must be a finite time, not %s', schedule.next_run_at);
    END IF;
END;
$$;

REVOKE ALL ON FUNCTION _check_schedule(task_schedules) FROM PUBLIC;

COMMIT;
