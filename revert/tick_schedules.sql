-- Revert taskpool:tick_schedules from pg: back to the v0.8.0 body, which reads worker_tasks alone and
-- applies a batch of each retention policy a minute

BEGIN;
SET client_min_messages = 'warning';

-- tick_schedules
-- The tick: recovers stale tasks, runs every due schedule once, applies a batch of each retention policy; pg_cron calls it each minute.
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
-- A schedule moves on to the next slot of its cadence (_schedule_next_run_at: the next cron
-- slot, local midnight for a day plan). A schedule whose run or next slot fails keeps none of
-- that run's tasks, records last_error and is retried after least(every, 10 minutes), or at its
-- next cron slot when that is sooner, counted from now so that a schedule whose own times cannot
-- be computed with gets a finite one; the other schedules run regardless.
-- Each tick records itself in schedule_ticks, for taskpool_health(). A rival tick holding that row
-- is recording a tick of the same moment: this one skips the row rather than wait for its commit.
-- Then it applies the retention policies, a batch each (apply_retention(1): at most batch_size
-- rows a policy, skipping a policy a rival holds), so that pg_cron alone keeps the history
-- bounded; the report's "retention" lists the policies that deleted something or failed, by name:
-- {"completed_tasks": {"pruned": 1000, "error": null}}, and is left out when none did.
-- Last, it folds the completions and failed attempts of the last minutes into
-- task_metric_totals (_fold_task_metric_totals), which keeps a scrape of taskpool_metrics() cheap.
DECLARE
    v_now       timestamptz := taskpool_now();
    v_schedule  task_schedules;
    v_count     integer;
    v_error     text;
    v_recovered integer;
    v_report    jsonb := '[]';
    v_retry_at  timestamptz;
    v_retention jsonb;
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
            v_retry_at := v_now + least(coalesce(v_schedule.every, interval '10 minutes'), interval '10 minutes');
            IF v_schedule.cron IS NOT NULL THEN
                BEGIN
                    v_retry_at := least(v_retry_at, cron_next_run(v_schedule.cron, v_now, v_schedule.time_zone));
                EXCEPTION WHEN OTHERS THEN
                    NULL;  -- its time zone is what failed: the 10 minutes stand
                END;
            END IF;
            UPDATE task_schedules s
            SET last_run_at = v_now,
                last_task_count = 0,
                last_error = v_error,
                next_run_at = v_retry_at
            WHERE s.id = v_schedule.id;
        END;

        v_report := v_report || jsonb_build_object('schedule', v_schedule.name, 'tasks', v_count, 'error', v_error);
    END LOOP;

    UPDATE schedule_ticks t
    SET last_tick_at = v_now
    WHERE t.singleton IN (SELECT l.singleton FROM schedule_ticks l FOR UPDATE SKIP LOCKED);

    SELECT jsonb_object_agg(r.policy, jsonb_build_object('pruned', r.pruned, 'error', r.error) ORDER BY r.policy)
    INTO v_retention
    FROM apply_retention(1) r
    WHERE r.pruned > 0 OR r.error IS NOT NULL;

    PERFORM _fold_task_metric_totals();
    RETURN jsonb_build_object('recovered', v_recovered, 'schedules', v_report)
        || CASE WHEN v_retention IS NULL THEN '{}' ELSE jsonb_build_object('retention', v_retention) END;
END;
$$;

COMMIT;
