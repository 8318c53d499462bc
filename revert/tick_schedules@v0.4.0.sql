-- Revert taskpool:tick_schedules from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.3.0 body, which moved every schedule on by hours and recorded only a failed run.

-- tick_schedules
-- The tick: recovers stale tasks, then runs every due schedule once; pg_cron calls it each minute.
CREATE OR REPLACE FUNCTION tick_schedules()
RETURNS jsonb
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT tick_schedules();
--   -- {"recovered": 0, "schedules": [{"schedule": "analytics_refresh", "tasks": 1, "error": null}]}
-- Due schedules are locked with FOR UPDATE SKIP LOCKED and moved on before commit, so ticks
-- racing (pg_cron, `pyworker scheduler`, a person) run each due schedule exactly once: a
-- rival skips the rows this tick holds, and once it commits, their next_run_at is no longer due.
-- A schedule whose run fails records last_error and is retried after
-- least(interval_hours, 10 minutes); the other schedules run regardless.
DECLARE
    v_now       timestamptz := taskpool_now();
    v_schedule  task_schedules;
    v_count     integer;
    v_error     text;
    v_recovered integer;
    v_report    jsonb := '[]';
BEGIN
    v_recovered := recover_stale_tasks();

    FOR v_schedule IN
        SELECT * FROM task_schedules s
        WHERE s.enabled AND s.next_run_at <= v_now
        ORDER BY s.next_run_at, s.id
        FOR UPDATE SKIP LOCKED
    LOOP
        BEGIN
            v_count := _run_schedule(v_schedule);
            v_error := NULL;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT;
            v_count := 0;
        END;

        UPDATE task_schedules s
        SET last_run_at = v_now,
            last_task_count = v_count,
            last_error = v_error,
            next_run_at = CASE
                WHEN v_error IS NOT NULL
                THEN v_now + least(make_interval(hours => s.interval_hours), interval '10 minutes')
                -- the next slot of the cadence after now: no drift, no backlog
                ELSE s.next_run_at + make_interval(hours => s.interval_hours)
                     * (floor(extract(epoch FROM v_now - s.next_run_at) / (s.interval_hours * 3600)) + 1)
            END
        WHERE s.id = v_schedule.id;

        v_report := v_report || jsonb_build_object('schedule', v_schedule.name, 'tasks', v_count, 'error', v_error);
    END LOOP;

    RETURN jsonb_build_object('recovered', v_recovered, 'schedules', v_report);
END;
$$;

REVOKE ALL ON FUNCTION tick_schedules() FROM PUBLIC;

COMMENT ON COLUMN task_schedules.next_run_at IS
    'Due at or after this time. A run moves it on by interval_hours from its previous value, '
    'skipping slots already past, so a late tick neither drifts nor fires a backlog.';

COMMIT;
