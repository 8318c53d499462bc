-- Revert taskpool:tick_schedules from pg: back to the v0.5.0 body, whose failed runs retried by interval_hours

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
-- Each tick records itself in schedule_ticks, for taskpool_health(). A rival tick holding that row
-- is recording a tick of the same moment: this one skips the row rather than wait for its commit.
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

    UPDATE schedule_ticks t
    SET last_tick_at = v_now
    WHERE t.singleton IN (SELECT l.singleton FROM schedule_ticks l FOR UPDATE SKIP LOCKED);

    RETURN jsonb_build_object('recovered', v_recovered, 'schedules', v_report);
END;
$$;

COMMIT;
