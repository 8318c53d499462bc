-- Deploy taskpool:tick_schedules to pg
-- requires: tick_schedules@v0.3.0
-- requires: _schedule_next_run_at

BEGIN;
SET client_min_messages = 'warning';

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
-- A schedule moves on to the next slot of its cadence (_schedule_next_run_at: local midnight
-- for a resync plan). A schedule whose run or next slot fails keeps none of that run's tasks,
-- records last_error and is retried after least(interval_hours, 10 minutes), counted from now
-- so that a schedule whose own times cannot be computed with gets a finite one; the other
-- schedules run regardless.
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
            UPDATE task_schedules s
            SET last_run_at = v_now,
                last_task_count = v_count,
                last_error = NULL,
                next_run_at = _schedule_next_run_at(v_schedule, v_now)
            WHERE s.id = v_schedule.id;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT;
            v_count := 0;
            UPDATE task_schedules s
            SET last_run_at = v_now,
                last_task_count = 0,
                last_error = v_error,
                next_run_at = v_now + least(make_interval(hours => s.interval_hours), interval '10 minutes')
            WHERE s.id = v_schedule.id;
        END;

        v_report := v_report || jsonb_build_object('schedule', v_schedule.name, 'tasks', v_count, 'error', v_error);
    END LOOP;

    RETURN jsonb_build_object('recovered', v_recovered, 'schedules', v_report);
END;
$$;

COMMENT ON COLUMN task_schedules.next_run_at IS
    'Due at or after this time. A run moves it on to the next slot of the cadence counted from its '
    'previous value (by interval_hours; a resync_plan by whole local days, to local midnight in '
    'time_zone), skipping slots already past, so a late tick neither drifts nor fires a backlog.';

-- Resync plans that moved on by hours sit at 23:00 or 01:00 local once a daylight-saving change
-- has passed: each goes to the nearest local midnight (23:00 to the next one, 01:00 back to its
-- own, so no day goes unplanned). A schedule whose time zone is unknown is left for the tick to report.
UPDATE task_schedules s
SET next_run_at = date_trunc('day', (s.next_run_at AT TIME ZONE s.time_zone) + interval '12 hours')
                  AT TIME ZONE s.time_zone
WHERE s.kind = 'resync_plan'
  AND s.time_zone IN (SELECT z.name FROM pg_timezone_names z);

COMMIT;
