-- Revert taskpool:v_worker_capacity from pg

-- Back to counting each worker for its task_workers.role alone, and without the paused column
-- (a view cannot lose a column by CREATE OR REPLACE: dropped and made again).

BEGIN;
SET client_min_messages = 'warning';

DROP VIEW v_worker_capacity;

-- v_worker_capacity
-- Per role: the work waiting, the workers there are, how fast they go, and how many it takes to drain.
CREATE VIEW v_worker_capacity AS
WITH
clock AS (
    SELECT taskpool_now() AS now
),
-- pending tasks, from the claim index
waiting AS (
    SELECT t.role,
           count(*) AS pending_tasks,
           count(*) FILTER (WHERE t.scheduled_for <= c.now) AS ready_tasks,
           c.now - min(t.scheduled_for) FILTER (WHERE t.scheduled_for <= c.now) AS oldest_ready_age
    FROM worker_tasks t CROSS JOIN clock c
    WHERE t.status = 'pending'
    GROUP BY t.role, c.now
),
busy AS (
    SELECT t.role, count(*) AS running_tasks
    FROM worker_tasks t
    WHERE t.status IN ('claimed', 'running')
    GROUP BY t.role
),
-- registered workers seen in the last 2 minutes, busy or idle (they heartbeat every 30 s by default)
seen AS (
    SELECT w.role, count(*) AS active_workers
    FROM task_workers w CROSS JOIN clock c
    WHERE w.last_seen_at > c.now - interval '2 minutes'
    GROUP BY w.role
),
-- the last hour's completions: how many, and how long one took from claim to completion
done AS (
    SELECT t.role, count(*) AS completed_last_hour,
           avg(extract(epoch FROM t.completed_at - t.claimed_at)) AS mean_seconds
    FROM worker_tasks t CROSS JOIN clock c
    WHERE t.status = 'completed' AND t.completed_at > c.now - interval '1 hour'
    GROUP BY t.role
),
failed AS (
    SELECT t.role, count(*) AS failed_attempts_last_hour
    FROM worker_task_attempts a
    JOIN worker_tasks t ON t.id = a.task_id
    CROSS JOIN clock c
    WHERE a.outcome IN ('retried', 'failed') AND a.ended_at > c.now - interval '1 hour'
    GROUP BY t.role
),
-- tasks created in the last hour: ids grow with time, so only the newest ids are read (a task
-- whose created_at was set back by hand can hide the ones created before it)
arrived AS (
    SELECT t.role, count(*) AS arrivals_last_hour
    FROM worker_tasks t CROSS JOIN clock c
    WHERE t.id > coalesce((SELECT o.id FROM worker_tasks o
                           WHERE o.created_at <= c.now - interval '1 hour'
                           ORDER BY o.id DESC LIMIT 1), 0)
      AND t.created_at > c.now - interval '1 hour'
    GROUP BY t.role
)
SELECT r.role,
       coalesce(w.pending_tasks, 0) AS pending_tasks,
       coalesce(w.ready_tasks, 0) AS ready_tasks,
       coalesce(b.running_tasks, 0) AS running_tasks,
       coalesce(s.active_workers, 0) AS active_workers,
       round(rate.per_hour, 1) AS tasks_per_worker_hour,
       CASE
           WHEN coalesce(w.pending_tasks, 0) = 0 THEN 0
           WHEN coalesce(s.active_workers, 0) = 0 OR rate.per_hour IS NULL THEN NULL
           ELSE round(w.pending_tasks / (s.active_workers * rate.per_hour), 2)
       END AS estimated_hours_to_drain,
       need.for_1_hour AS workers_needed_for_1_hour,
       need.for_4_hours AS workers_needed_for_4_hours,
       need.for_8_hours AS workers_needed_for_8_hours,
       w.oldest_ready_age,
       coalesce(a.arrivals_last_hour, 0) AS arrivals_last_hour,
       coalesce(d.completed_last_hour, 0) AS completed_last_hour,
       coalesce(f.failed_attempts_last_hour, 0) AS failed_attempts_last_hour,
       round(coalesce(f.failed_attempts_last_hour, 0)::numeric
             / nullif(coalesce(f.failed_attempts_last_hour, 0) + coalesce(d.completed_last_hour, 0), 0), 3)
           AS failure_rate
FROM task_roles r
LEFT JOIN waiting w ON w.role = r.role
LEFT JOIN busy b ON b.role = r.role
LEFT JOIN seen s ON s.role = r.role
LEFT JOIN done d ON d.role = r.role
LEFT JOIN failed f ON f.role = r.role
LEFT JOIN arrived a ON a.role = r.role
-- what one busy worker finishes in an hour; unknown (NULL) with no completion in the last hour
CROSS JOIN LATERAL (
    SELECT CASE WHEN d.mean_seconds IS NOT NULL
                THEN 3600 / greatest(d.mean_seconds, 0.001)::numeric END AS per_hour
) AS rate
CROSS JOIN LATERAL (
    SELECT CASE WHEN coalesce(w.pending_tasks, 0) = 0 THEN 0
                ELSE ceil(w.pending_tasks / (rate.per_hour * 1))::integer END AS for_1_hour,
           CASE WHEN coalesce(w.pending_tasks, 0) = 0 THEN 0
                ELSE ceil(w.pending_tasks / (rate.per_hour * 4))::integer END AS for_4_hours,
           CASE WHEN coalesce(w.pending_tasks, 0) = 0 THEN 0
                ELSE ceil(w.pending_tasks / (rate.per_hour * 8))::integer END AS for_8_hours
) AS need;

COMMENT ON VIEW v_worker_capacity IS
    'Per role. tasks_per_worker_hour = 3600 / mean seconds from claim to completion over the last '
    'hour (NULL: no completion in the last hour, so unknown). estimated_hours_to_drain = '
    'pending / (active_workers * tasks_per_worker_hour): 0 with nothing pending, NULL with no active '
    'worker or unknown throughput. workers_needed_for_N_hours = ceil(pending / (rate * N)): 0 with '
    'nothing pending, NULL when the rate is unknown. active_workers: registry rows seen in the last '
    '2 minutes. failure_rate: failed attempts / (failed attempts + completions) in the last hour, NULL '
    'with neither.';

COMMIT;
