-- Revert taskpool:taskpool_health from pg

-- Back to the checks of v0.5.0, without paused_roles and disabled_platforms.

BEGIN;
SET client_min_messages = 'warning';

-- taskpool_health
-- One row per check of what needs a person: status 'ok' or 'attention', what was found, and what to do.
CREATE OR REPLACE FUNCTION taskpool_health(
    max_tick_age     interval DEFAULT NULL,
    max_snapshot_age interval DEFAULT NULL)
RETURNS TABLE (check_name text, status text, detail text, action text)
LANGUAGE plpgsql
AS $$
-- Examples:
--   SELECT * FROM taskpool_health();
--   SELECT check_name, detail, action FROM taskpool_health() WHERE status <> 'ok';   -- for an alert
--   SELECT * FROM taskpool_health(max_tick_age := '2 hours');   -- a scheduler ticking hourly
-- The checks, always in this order:
--   stuck_tasks      claimed or running tasks silent past their role's stale threshold (v_stuck_tasks):
--                    their worker died and no tick has recovered them yet
--   schedule_tick    with a schedule enabled, no tick_schedules() for longer than max_tick_age (a
--                    database that never ticked counts from the deploy of schedule_ticks)
--   schedule_errors  enabled schedules whose last run failed
--   open_circuits    platforms whose circuit breaker is open: none of their tasks is claimed
--   xmin_horizon     a session or prepared transaction holding a snapshot longer than
--                    max_snapshot_age (v_xmin_horizon; autovacuum aside): no dead task row can be
--                    vacuumed meanwhile. pg_stat_activity is read once per transaction: call
--                    pg_stat_clear_snapshot() before asking again in the same one.
-- NULL (or omitted) max ages are 10 minutes each. action is NULL for a check that is ok.
DECLARE
    v_now              timestamptz := taskpool_now();
    v_max_tick_age     interval := coalesce(taskpool_health.max_tick_age, interval '10 minutes');
    v_max_snapshot_age interval := coalesce(taskpool_health.max_snapshot_age, interval '10 minutes');
BEGIN
    IF v_max_tick_age < interval '0' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023', MESSAGE = format('max_tick_age must not be negative, not %s', v_max_tick_age);
    END IF;
    IF v_max_snapshot_age < interval '0' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023', MESSAGE = format('max_snapshot_age must not be negative, not %s', v_max_snapshot_age);
    END IF;

    RETURN QUERY
    WITH stuck AS (
        SELECT count(*) OVER () AS tasks, s.*
        FROM v_stuck_tasks s
        ORDER BY s.last_heartbeat_at, s.id
        LIMIT 1
    )
    SELECT 'stuck_tasks',
           CASE WHEN s.tasks IS NULL THEN 'ok' ELSE 'attention' END,
           CASE WHEN s.tasks IS NULL
                THEN 'no claimed or running task is silent past its role''s stale threshold'
                ELSE format('%s claimed or running task(s) silent past their role''s stale threshold; '
                            'the oldest: task %s (%s) of worker %s, silent for %s (threshold %s)',
                            s.tasks, s.id, s.role, s.worker_id, date_trunc('second', s.silent_for),
                            s.stale_threshold) END,
           CASE WHEN s.tasks IS NOT NULL
                THEN 'Their worker stopped heartbeating: find out why (v_workers lists the silent '
                     'ones). The tick hands such tasks back to the pool; if they stay, it is not '
                     'running (see schedule_tick). Recover them now: SELECT recover_stale_tasks();' END
    FROM (SELECT NULL) AS always
    LEFT JOIN stuck s ON true;

    RETURN QUERY
    WITH tick AS (
        SELECT (SELECT count(*) FROM task_schedules s WHERE s.enabled) AS enabled,
               t.last_tick_at,
               t.created_at,
               v_now - coalesce(t.last_tick_at, t.created_at) AS silent_for
        FROM (SELECT NULL) AS always
        LEFT JOIN schedule_ticks t ON true
    ),
    verdict AS (
        SELECT k.*, k.enabled = 0 OR coalesce(k.silent_for <= v_max_tick_age, false) AS ok
        FROM tick k
    )
    SELECT 'schedule_tick',
           CASE WHEN k.ok THEN 'ok' ELSE 'attention' END,
           CASE WHEN k.last_tick_at IS NOT NULL
                THEN format('last tick %s ago, at %s', date_trunc('second', k.silent_for),
                            date_trunc('second', k.last_tick_at))
                WHEN k.created_at IS NOT NULL
                THEN format('no tick since the deploy %s ago, at %s', date_trunc('second', k.silent_for),
                            date_trunc('second', k.created_at))
                ELSE 'no tick recorded: the schedule_ticks row is missing' END
           || CASE WHEN k.ok THEN '' ELSE format(', longer than %s', v_max_tick_age) END
           || format('; %s schedule(s) enabled', k.enabled),
           CASE WHEN NOT k.ok
                THEN 'Due schedules wait for the tick, and so do stale tasks. Run it every minute: '
                     '`pyworker cron install` (pg_cron; `pyworker cron status` shows its runs) or '
                     '`pyworker scheduler`. SELECT tick_schedules(); runs one now.' END
    FROM verdict k;

    RETURN QUERY
    WITH failed AS (
        SELECT count(*) AS schedules,
               string_agg(format('%s: %s', s.name, s.last_error), '; ' ORDER BY s.name) AS errors
        FROM task_schedules s
        WHERE s.enabled AND s.last_error IS NOT NULL
    )
    SELECT 'schedule_errors',
           CASE WHEN f.schedules = 0 THEN 'ok' ELSE 'attention' END,
           CASE WHEN f.schedules = 0 THEN 'no enabled schedule failed its last run'
                ELSE format('%s enabled schedule(s) failed their last run: %s', f.schedules, f.errors) END,
           CASE WHEN f.schedules > 0
                THEN 'Fix the cause (SELECT name, last_error FROM task_schedules); the tick retries a '
                     'failed schedule within 10 minutes, and trigger_schedule(name) runs one now.' END
    FROM failed f;

    RETURN QUERY
    WITH open AS (
        SELECT count(*) AS platforms,
               string_agg(format('%s until %s (%s failures in a row, the last: %s)', g.platform,
                                 date_trunc('second', g.open_until), g.consecutive_failures, coalesce(g.last_error, 'no message')),
                          '; ' ORDER BY g.platform) AS circuits,
               min(g.platform) AS first_platform
        FROM platform_governance g
        WHERE g.open_until > v_now
    )
    SELECT 'open_circuits',
           CASE WHEN o.platforms = 0 THEN 'ok' ELSE 'attention' END,
           CASE WHEN o.platforms = 0 THEN 'no platform''s circuit is open'
                ELSE format('%s platform circuit(s) open: %s', o.platforms, o.circuits) END,
           CASE WHEN o.platforms > 0
                THEN format('No task of an open platform is claimed until its circuit closes: after '
                            'open_until, the first request that succeeds closes it. Check the platform '
                            '(SELECT * FROM platform_events ORDER BY at DESC). Once it answers again, '
                            'close the circuit now: SELECT record_platform_result(%L, true);',
                            o.first_platform) END
    FROM open o;

    RETURN QUERY
    WITH holders AS (
        SELECT count(*) OVER () AS holders, h.*
        FROM v_xmin_horizon h
        LEFT JOIN pg_stat_activity a ON a.pid = h.pid
        WHERE h.transaction_age > v_max_snapshot_age
          AND a.backend_type IS DISTINCT FROM 'autovacuum worker'
        ORDER BY h.transaction_age DESC
        LIMIT 1
    )
    SELECT 'xmin_horizon',
           CASE WHEN h.holders IS NULL THEN 'ok' ELSE 'attention' END,
           CASE WHEN h.holders IS NULL
                THEN format('no session has held a snapshot for longer than %s', v_max_snapshot_age)
                WHEN h.holder = 'prepared transaction'
                THEN format('%s holder(s) of a snapshot older than %s; the oldest: prepared transaction %L '
                            'of %s, for %s', h.holders, v_max_snapshot_age,
                            h.application_name, h.user_name, date_trunc('second', h.transaction_age))
                ELSE format('%s holder(s) of a snapshot older than %s; the oldest: session %s (user %s, '
                            '%s%s), for %s', h.holders, v_max_snapshot_age,
                            h.pid, h.user_name, 'application ' || quote_literal(nullif(h.application_name, '')) || ', ',
                            h.state, date_trunc('second', h.transaction_age)) END,
           CASE WHEN h.holder = 'prepared transaction'
                THEN format('No dead task row can be vacuumed meanwhile, and every claim slows down. '
                            'Finish it if nobody will: ROLLBACK PREPARED %L; (or COMMIT PREPARED). '
                            'SELECT * FROM v_xmin_horizon lists the holders.', h.application_name)
                WHEN h.holders IS NOT NULL
                THEN format('No dead task row can be vacuumed meanwhile, and every claim slows down. '
                            'End the session if it should not be there: SELECT pg_terminate_backend(%s); '
                            'SELECT * FROM v_xmin_horizon lists the holders.', h.pid) END
    FROM (SELECT NULL) AS always
    LEFT JOIN holders h ON true;
END;
$$;

REVOKE ALL ON FUNCTION taskpool_health(interval, interval) FROM PUBLIC;

COMMENT ON FUNCTION taskpool_health(interval, interval) IS $$One row per check of what needs a person: status 'ok' or 'attention', what was found, and what to do.
Example:
  SELECT * FROM taskpool_health();
  SELECT check_name, detail, action FROM taskpool_health() WHERE status <> 'ok';   -- for an alert
  SELECT * FROM taskpool_health(max_tick_age := '2 hours');   -- a scheduler ticking hourly$$;

COMMIT;
