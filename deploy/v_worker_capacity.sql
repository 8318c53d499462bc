-- Deploy taskpool:v_worker_capacity to pg
-- requires: v_worker_capacity@v0.8.0
-- requires: worker_tasks_with_history

BEGIN;
SET client_min_messages = 'warning';

-- v_worker_capacity
-- Per role: the work waiting, the processes and slots there are, how fast a slot goes, and how
-- many slots and processes it takes to drain. A process runs up to its concurrency of tasks at
-- once: the per-slot rate is multiplied by slots, never by processes.
CREATE OR REPLACE VIEW v_worker_capacity AS
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
-- registered worker processes seen in the last 2 minutes, busy or idle (they heartbeat every 30 s
-- by default), and their slots (each runs up to its concurrency of tasks at once). A process
-- that serves several roles counts, with all its slots, once for each of them. last_seen_at is
-- over every registration of the role: the slots a process of the role had when it last ran,
-- for a role none runs now.
seen AS (
    SELECT wr.role,
           count(*) FILTER (WHERE w.last_seen_at > c.now - interval '2 minutes') AS active_processes,
           sum(w.concurrency) FILTER (WHERE w.last_seen_at > c.now - interval '2 minutes') AS active_slots,
           avg(w.concurrency) AS registered_slots_per_process
    FROM task_worker_roles wr
    JOIN task_workers w ON w.worker_id = wr.worker_id
    CROSS JOIN clock c
    GROUP BY wr.role
),
-- the last hour's completions: how many, and how long one took from claim to completion
-- (taskpool_now() and not the clock CTE's value: the planner estimates the range with the
-- function's value, and reads the last hour through the completed_at and ended_at indexes
-- rather than hash-joining every task of the history)
-- (worker_tasks and the history: a task finished over history_after ago has moved; the
-- history's completed_at and ended_at indexes serve the same hour)
done AS (
    SELECT t.role, count(*) AS completed_last_hour,
           avg(extract(epoch FROM t.completed_at - t.claimed_at)) AS mean_seconds
    FROM worker_tasks_with_history t
    WHERE t.status = 'completed' AND t.completed_at > taskpool_now() - interval '1 hour'
    GROUP BY t.role
),
failed AS (
    SELECT f.role, sum(f.attempts)::bigint AS failed_attempts_last_hour
    FROM (SELECT t.role, count(*) AS attempts
          FROM worker_task_attempts a
          JOIN worker_tasks t ON t.id = a.task_id
          WHERE a.outcome IN ('retried', 'failed') AND a.ended_at > taskpool_now() - interval '1 hour'
          GROUP BY t.role
          UNION ALL
          SELECT t.role, count(*)
          FROM worker_task_attempt_history a
          JOIN worker_task_history t ON t.id = a.task_id AND t.completed_at = a.task_completed_at
          WHERE a.outcome IN ('retried', 'failed') AND a.ended_at > taskpool_now() - interval '1 hour'
          GROUP BY t.role) f
    GROUP BY f.role
),
-- tasks created in the last hour: ids grow with time, so only the ids after the newest task
-- created before the hour are read (a task whose created_at was set back by hand can hide the
-- ones created before it). That id is looked up once: a subquery per row read the whole hour's
-- ids again for each of them (a second with a few thousand tasks, what KEDA polls every 30 s).
hour_start AS (
    SELECT coalesce((SELECT o.id FROM worker_tasks_with_history o CROSS JOIN clock c
                     WHERE o.created_at <= c.now - interval '1 hour'
                     ORDER BY o.id DESC LIMIT 1), 0) AS last_id_before
),
arrived AS (
    SELECT t.role, count(*) AS arrivals_last_hour
    FROM worker_tasks_with_history t CROSS JOIN clock c CROSS JOIN hour_start h
    WHERE t.id > h.last_id_before
      AND t.created_at > c.now - interval '1 hour'
    GROUP BY t.role
)
SELECT r.role,
       coalesce(w.pending_tasks, 0) AS pending_tasks,
       coalesce(w.ready_tasks, 0) AS ready_tasks,
       coalesce(b.running_tasks, 0) AS running_tasks,
       coalesce(s.active_processes, 0) AS active_workers,
       round(rate.per_hour, 1) AS tasks_per_worker_hour,
       CASE
           WHEN coalesce(w.pending_tasks, 0) = 0 THEN 0
           WHEN coalesce(s.active_slots, 0) = 0 OR rate.per_hour IS NULL THEN NULL
           ELSE round(w.pending_tasks / (s.active_slots * rate.per_hour), 2)
       END AS estimated_hours_to_drain,
       processes.for_1_hour AS workers_needed_for_1_hour,
       processes.for_4_hours AS workers_needed_for_4_hours,
       processes.for_8_hours AS workers_needed_for_8_hours,
       w.oldest_ready_age,
       coalesce(a.arrivals_last_hour, 0) AS arrivals_last_hour,
       coalesce(d.completed_last_hour, 0) AS completed_last_hour,
       coalesce(f.failed_attempts_last_hour, 0) AS failed_attempts_last_hour,
       round(coalesce(f.failed_attempts_last_hour, 0)::numeric
             / nullif(coalesce(f.failed_attempts_last_hour, 0) + coalesce(d.completed_last_hour, 0), 0), 3)
           AS failure_rate,
       -- last, so that CREATE OR REPLACE VIEW could add it; a paused role's workers claim nothing
       r.paused_at IS NOT NULL AS paused,
       -- the same in both units, each named as such (added last, for CREATE OR REPLACE VIEW)
       coalesce(s.active_processes, 0) AS active_processes,
       coalesce(s.active_slots, 0)::integer AS active_slots,
       round(per_process.slots, 1) AS slots_per_process,
       round(rate.per_hour, 1) AS tasks_per_slot_hour,
       slots.for_1_hour AS slots_needed_for_1_hour,
       slots.for_4_hours AS slots_needed_for_4_hours,
       slots.for_8_hours AS slots_needed_for_8_hours,
       processes.for_1_hour AS processes_needed_for_1_hour,
       processes.for_4_hours AS processes_needed_for_4_hours,
       processes.for_8_hours AS processes_needed_for_8_hours
FROM task_roles r
LEFT JOIN waiting w ON w.role = r.role
LEFT JOIN busy b ON b.role = r.role
LEFT JOIN seen s ON s.role = r.role
LEFT JOIN done d ON d.role = r.role
LEFT JOIN failed f ON f.role = r.role
LEFT JOIN arrived a ON a.role = r.role
-- what one busy slot finishes in an hour; unknown (NULL) with no completion in the last hour
CROSS JOIN LATERAL (
    SELECT CASE WHEN d.mean_seconds IS NOT NULL
                THEN 3600 / greatest(d.mean_seconds, 0.001)::numeric END AS per_hour
) AS rate
-- the slots a process of the role has: the live ones' mean, else the mean of every process
-- registered for it (one scaled to zero keeps its rows until retention removes them), else 1
CROSS JOIN LATERAL (
    SELECT coalesce(s.active_slots::numeric / nullif(s.active_processes, 0),
                    s.registered_slots_per_process, 1) AS slots
) AS per_process
-- slots busy for N hours to drain the pending tasks, and the processes that have them
CROSS JOIN LATERAL (
    SELECT CASE WHEN coalesce(w.pending_tasks, 0) = 0 THEN 0
                ELSE ceil(w.pending_tasks / (rate.per_hour * 1))::integer END AS for_1_hour,
           CASE WHEN coalesce(w.pending_tasks, 0) = 0 THEN 0
                ELSE ceil(w.pending_tasks / (rate.per_hour * 4))::integer END AS for_4_hours,
           CASE WHEN coalesce(w.pending_tasks, 0) = 0 THEN 0
                ELSE ceil(w.pending_tasks / (rate.per_hour * 8))::integer END AS for_8_hours
) AS slots
CROSS JOIN LATERAL (
    SELECT CASE WHEN coalesce(w.pending_tasks, 0) = 0 THEN 0
                ELSE ceil(w.pending_tasks / (rate.per_hour * 1 * per_process.slots))::integer END AS for_1_hour,
           CASE WHEN coalesce(w.pending_tasks, 0) = 0 THEN 0
                ELSE ceil(w.pending_tasks / (rate.per_hour * 4 * per_process.slots))::integer END AS for_4_hours,
           CASE WHEN coalesce(w.pending_tasks, 0) = 0 THEN 0
                ELSE ceil(w.pending_tasks / (rate.per_hour * 8 * per_process.slots))::integer END AS for_8_hours
) AS processes;

COMMIT;
