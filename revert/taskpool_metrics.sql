-- Revert taskpool:taskpool_metrics from pg: back to the v0.8.0 body, which reads worker_tasks alone and
-- reports nothing of retention

BEGIN;
SET client_min_messages = 'warning';

-- taskpool_metrics
-- The pool's metrics for Prometheus, a row per sample: name, type, help text, labels and value, read in one query.
CREATE OR REPLACE FUNCTION taskpool_metrics()
RETURNS TABLE (metric text, kind text, help text, labels jsonb, value double precision)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
SET jit = off
AS $$
-- Example:
--   SELECT metric, labels, value FROM taskpool_metrics() WHERE metric = 'taskpool_tasks_ready';
-- pyworker.metrics turns the rows into the Prometheus text format (the dashboard's /metrics).
-- kind is 'gauge' or 'counter'; a counter's name ends in _total and its value only goes up:
-- completions and failed attempts are what task_metric_totals folded in (or a prune deleted)
-- plus the rows newer than its watermark, counted here through the completed_at and ended_at
-- indexes, so a scrape reads about a tick's worth of history whatever the table holds. A value
-- that is unknown (workers needed with no completion in the last hour to measure a rate by) is
-- left out rather than given as 0. Every role of task_roles gets every status and counter, 0
-- included, so that an alert sees the series before its first event.
-- SECURITY DEFINER: a monitoring login needs only EXECUTE on it (it reads pg_stat_activity for
-- the xmin horizon, which shows other sessions in full only to its owner's kind of role).
-- PL/pgSQL for the watermark: the query gets its value as a parameter, so the planner sees how
-- recent it is and reads the newer rows through the indexes (a value from a CTE or a subquery is
-- unknown when the query is planned, and was estimated as a third of the history). jit is off:
-- the scrape is many small parts, and compiling them cost more than running them.
#variable_conflict use_column
DECLARE
    v_folded_before timestamptz := (SELECT w.folded_before FROM task_metric_watermark w);
BEGIN
RETURN QUERY
WITH
clock AS (
    SELECT taskpool_now() AS now
),
capacity AS (
    SELECT * FROM v_worker_capacity
),
unserved AS (
    SELECT u.role FROM unserved_roles() u
),
statuses (status) AS (
    VALUES ('pending'), ('claimed'), ('running'), ('completed'), ('failed'), ('cancelled')
),
-- the statuses counted from rows, each through a partial index of its own
present AS (
    SELECT t.role, t.status, count(*) AS n
    FROM worker_tasks t
    WHERE t.status IN ('claimed', 'running')
    GROUP BY t.role, t.status
    UNION ALL
    SELECT t.role, t.status, count(*)
    FROM worker_tasks t
    WHERE t.status IN ('failed', 'cancelled')
    GROUP BY t.role, t.status
    UNION ALL
    SELECT c.role, 'pending', c.pending_tasks FROM capacity c
),
-- the history newer than the watermark, not folded yet
unfolded AS (
    SELECT t.role, 'completed' AS counter, count(*) AS n
    FROM worker_tasks t
    WHERE t.status = 'completed' AND t.completed_at >= v_folded_before
    GROUP BY t.role
    UNION ALL
    SELECT t.role, 'attempts_' || a.outcome, count(*)
    FROM worker_task_attempts a
    JOIN worker_tasks t ON t.id = a.task_id
    WHERE a.outcome IN ('retried', 'failed') AND a.ended_at >= v_folded_before
    GROUP BY t.role, a.outcome
),
counters AS (
    SELECT r.role, c.counter, coalesce(m.total, 0) + coalesce(u.n, 0) AS total
    FROM task_roles r
    CROSS JOIN (VALUES ('completed'), ('attempts_retried'), ('attempts_failed'),
                       ('stale_recovered'), ('pruned_completed')) AS c (counter)
    LEFT JOIN task_metric_totals m ON m.role = r.role AND m.counter = c.counter
    LEFT JOIN unfolded u ON u.role = r.role AND u.counter = c.counter
),
oldest_transaction AS (
    SELECT max(extract(epoch FROM x.transaction_age)) AS seconds, max(x.xmin_age) AS xids
    FROM v_xmin_horizon x
)
SELECT 'taskpool_tasks', 'gauge',
       'Tasks in the pool by role and status (completed: those not pruned yet).',
       jsonb_build_object('role', r.role, 'status', s.status),
       CASE WHEN s.status = 'completed'
            THEN (SELECT done.total - gone.total
                  FROM counters done, counters gone
                  WHERE done.role = r.role AND done.counter = 'completed'
                    AND gone.role = r.role AND gone.counter = 'pruned_completed')
            ELSE coalesce((SELECT p.n FROM present p WHERE p.role = r.role AND p.status = s.status), 0)
       END
FROM task_roles r CROSS JOIN statuses s
UNION ALL
SELECT 'taskpool_tasks_ready', 'gauge',
       'Pending tasks whose scheduled_for has come: claimable now.',
       jsonb_build_object('role', c.role), c.ready_tasks
FROM capacity c
UNION ALL
SELECT 'taskpool_oldest_ready_task_age_seconds', 'gauge',
       'How long the oldest ready task has been claimable (0 when none is ready).',
       jsonb_build_object('role', c.role), coalesce(extract(epoch FROM c.oldest_ready_age), 0)
FROM capacity c
UNION ALL
SELECT 'taskpool_workers_active', 'gauge',
       'Worker processes of the role seen in the last 2 minutes, busy or idle (v_worker_capacity).',
       jsonb_build_object('role', c.role), c.active_processes
FROM capacity c
UNION ALL
SELECT 'taskpool_slots_active', 'gauge',
       'Task slots of those processes (their --concurrency summed): tasks they can run at once.',
       jsonb_build_object('role', c.role), c.active_slots
FROM capacity c
UNION ALL
SELECT 'taskpool_workers_needed', 'gauge',
       'Worker processes it takes to drain the pending tasks within the horizon at the last hour''s rate, at the role''s slots per process (absent while the rate is unknown).',
       jsonb_build_object('role', c.role, 'horizon', n.horizon), n.workers
FROM capacity c
CROSS JOIN LATERAL (VALUES ('1h', c.processes_needed_for_1_hour),
                           ('4h', c.processes_needed_for_4_hours),
                           ('8h', c.processes_needed_for_8_hours)) AS n (horizon, workers)
WHERE n.workers IS NOT NULL
UNION ALL
SELECT 'taskpool_slots_needed', 'gauge',
       'Task slots it takes to drain the pending tasks within the horizon at the last hour''s rate (absent while the rate is unknown).',
       jsonb_build_object('role', c.role, 'horizon', n.horizon), n.slots
FROM capacity c
CROSS JOIN LATERAL (VALUES ('1h', c.slots_needed_for_1_hour),
                           ('4h', c.slots_needed_for_4_hours),
                           ('8h', c.slots_needed_for_8_hours)) AS n (horizon, slots)
WHERE n.slots IS NOT NULL
UNION ALL
SELECT 'taskpool_role_unserved', 'gauge',
       'Whether the role''s ready tasks have waited over 5 minutes with no live worker of the role (1): unserved_roles(), the unserved_roles health check.',
       jsonb_build_object('role', c.role), (c.role IN (SELECT u.role FROM unserved u))::integer
FROM capacity c
UNION ALL
SELECT 'taskpool_role_paused', 'gauge',
       'Whether the role is paused (1): no claim hands out its tasks until resume_role.',
       jsonb_build_object('role', c.role), c.paused::integer
FROM capacity c
UNION ALL
SELECT 'taskpool_tasks_completed_total', 'counter',
       'Tasks completed, pruned ones included.',
       jsonb_build_object('role', k.role), k.total
FROM counters k WHERE k.counter = 'completed'
UNION ALL
SELECT 'taskpool_attempts_failed_total', 'counter',
       'Attempts that failed, pruned ones included: outcome retried (the task went back to pending) or failed (for good).',
       jsonb_build_object('role', k.role, 'outcome', substr(k.counter, length('attempts_') + 1)), k.total
FROM counters k WHERE k.counter IN ('attempts_retried', 'attempts_failed')
UNION ALL
SELECT 'taskpool_stale_recoveries_total', 'counter',
       'Claimed or running tasks taken back from a worker that stopped heartbeating.',
       jsonb_build_object('role', k.role), k.total
FROM counters k WHERE k.counter = 'stale_recovered'
UNION ALL
SELECT 'taskpool_platform_circuit_open', 'gauge',
       'Whether the platform''s circuit breaker is open (1): none of its tasks is claimed.',
       jsonb_build_object('platform', g.platform), (coalesce(g.open_until > k.now, false))::integer
FROM platform_governance g CROSS JOIN clock k
UNION ALL
SELECT 'taskpool_platform_disabled', 'gauge',
       'Whether an operator disabled the platform (1): none of its tasks is claimed until enable_platform.',
       jsonb_build_object('platform', g.platform), (NOT g.enabled)::integer
FROM platform_governance g
UNION ALL
SELECT 'taskpool_platform_consecutive_failures', 'gauge',
       'Failed requests to the platform in a row; the circuit opens at its failure_threshold.',
       jsonb_build_object('platform', g.platform), g.consecutive_failures
FROM platform_governance g
UNION ALL
SELECT 'taskpool_platform_requests_total', 'counter',
       'Requests to the platform that acquire_platform_request let through.',
       jsonb_build_object('platform', g.platform), g.requests_total
FROM platform_governance g
UNION ALL
SELECT 'taskpool_platform_circuit_openings_total', 'counter',
       'Times the platform''s circuit breaker opened (platform_events).',
       jsonb_build_object('platform', g.platform),
       (SELECT count(*) FROM platform_events e WHERE e.platform = g.platform AND e.event = 'opened')
FROM platform_governance g
UNION ALL
SELECT 'taskpool_platform_rate_limit_requests_per_minute', 'gauge',
       'The platform''s request rate limit.',
       jsonb_build_object('platform', g.platform), g.requests_per_minute
FROM platform_governance g
UNION ALL
SELECT 'taskpool_schedule_lag_seconds', 'gauge',
       'How far past its next_run_at an enabled schedule is (0 when not due yet): a tick that stopped shows here.',
       jsonb_build_object('schedule', s.name), greatest(0, extract(epoch FROM k.now - s.next_run_at))
FROM task_schedules s CROSS JOIN clock k
WHERE s.enabled
UNION ALL
SELECT 'taskpool_schedule_last_run_failed', 'gauge',
       'Whether the schedule''s last run failed (1); its last_error says why (pyworker schedules list).',
       jsonb_build_object('schedule', s.name), (s.last_error IS NOT NULL)::integer
FROM task_schedules s
UNION ALL
SELECT 'taskpool_tick_age_seconds', 'gauge',
       'Seconds since tick_schedules() last ran (absent before the first tick).',
       '{}'::jsonb, extract(epoch FROM k.now - t.last_tick_at)
FROM schedule_ticks t CROSS JOIN clock k
WHERE t.last_tick_at IS NOT NULL
UNION ALL
SELECT 'taskpool_xmin_horizon_age_seconds', 'gauge',
       'Age of the oldest transaction holding back the xmin horizon (vacuum of the pool), 0 with none.',
       '{}'::jsonb, coalesce(o.seconds, 0)
FROM oldest_transaction o
UNION ALL
SELECT 'taskpool_xmin_horizon_age_transactions', 'gauge',
       'Transaction ids since the oldest snapshot still held in this database, 0 with none.',
       '{}'::jsonb, coalesce(o.xids, 0)::double precision
FROM oldest_transaction o;
END;
$$;

COMMIT;
