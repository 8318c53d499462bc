-- Revert taskpool:task_schedules_cadence from pg

BEGIN;
SET client_min_messages = 'warning';

-- interval_hours alone cannot say a cron or sub-hour cadence: refuse rather than change one.
DO $$
DECLARE
    v_names text;
BEGIN
    SELECT string_agg(name, ', ' ORDER BY name) INTO v_names FROM task_schedules WHERE interval_hours IS NULL;
    IF v_names IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('cannot revert schedule cadences: %s run on cron or not in whole hours', v_names),
            HINT = 'Give them an interval in whole hours, or delete them, first.';
    END IF;
END;
$$;

DROP TRIGGER _050_cadence ON task_schedules;
DROP FUNCTION tg_task_schedules__cadence();
ALTER TABLE task_schedules
    DROP CONSTRAINT task_schedules_one_cadence,
    DROP CONSTRAINT task_schedules_every_in_range,
    DROP CONSTRAINT task_schedules_cron_parses,
    DROP COLUMN every,
    DROP COLUMN cron,
    ALTER COLUMN interval_hours SET NOT NULL;
COMMENT ON COLUMN task_schedules.interval_hours IS NULL;
COMMENT ON COLUMN task_schedules.kind IS
    'single: one task of the role (payload, plus state_code when set); '
    'per_store: one task per active store (of state_code when set) that has no active task of the role; '
    'day_plan: planner(schedule, today in time_zone), at local midnight, every ceil(interval_hours / 24) days.';
COMMENT ON COLUMN task_schedules.next_run_at IS
    'Due at or after this time. A run moves it on by interval_hours from its previous value, '
    'skipping slots already past, so a late tick neither drifts nor fires a backlog.';
COMMENT ON COLUMN task_schedules.last_error IS
    'The error of the last run, NULL when it succeeded. A failed run is retried after '
    'least(interval_hours, 10 minutes).';

COMMIT;
