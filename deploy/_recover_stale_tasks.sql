-- Deploy taskpool:_recover_stale_tasks to pg
-- requires: notify_workers_of_taken_tasks

-- _recover_stale_tasks's home: its live body, unchanged from notify_workers_of_taken_tasks.
-- Change _recover_stale_tasks here, with `sqitch rework _recover_stale_tasks`.

BEGIN;
SET client_min_messages = 'warning';

-- _recover_stale_tasks
-- recover_stale_tasks' work, for every role or for one: the tick recovers them all, a worker its
-- own role's (recover_stale_tasks_of_role). As before, and each recovered task's worker is told.
CREATE OR REPLACE FUNCTION _recover_stale_tasks(threshold_minutes integer, only_role text)
RETURNS integer
LANGUAGE plpgsql
AS $$
-- A stale task goes back to pending (retry_count + 1, ready now) while retries remain, else
-- to failed; one whose cancel was requested ends cancelled. Never left claimed or running.
-- Each recovery is counted in task_metric_totals (stale_recovered, per role): the tick's
-- business, not the hot path's, so one counter row per role is cheap here. The worker that held
-- a recovered task is notified ('abort:<task id>' on its wake channel): one that is alive but
-- late stops the handler at once instead of running it beside the task's next attempt.
DECLARE
    v_now      timestamptz := taskpool_now();
    v_count    integer;
    v_notified integer;
BEGIN
    WITH
    -- silent tasks, locked; one a worker is touching right now (a heartbeat, a completion) is
    -- skipped, as its worker is evidently alive
    stale AS (
        SELECT t.id,
               t.worker_id,
               CASE WHEN t.cancel_requested_at IS NOT NULL THEN 'cancelled'
                    WHEN t.retry_count < t.max_retries THEN 'pending'
                    ELSE 'failed' END AS next_status
        FROM worker_tasks t
        JOIN task_roles r ON r.role = t.role
        WHERE t.status IN ('claimed', 'running')
          AND t.last_heartbeat_at < v_now - coalesce(make_interval(mins => _recover_stale_tasks.threshold_minutes),
                                                     r.stale_threshold)
          AND (_recover_stale_tasks.only_role IS NULL OR t.role = _recover_stale_tasks.only_role)
        FOR UPDATE OF t SKIP LOCKED
    ),
    recovered AS (
        UPDATE worker_tasks t
        SET status = s.next_status,
            retry_count = t.retry_count + (s.next_status = 'pending')::integer,
            scheduled_for = CASE WHEN s.next_status = 'pending' THEN v_now ELSE t.scheduled_for END,
            error_message = format('stale: worker %s sent no heartbeat since %s', t.worker_id, t.last_heartbeat_at)
        FROM stale s
        WHERE t.id = s.id
        RETURNING t.id, t.role, s.worker_id
    ),
    counted AS (
        INSERT INTO task_metric_totals AS m (role, counter, total)
        SELECT r.role, 'stale_recovered', count(*) FROM recovered r GROUP BY r.role
        ON CONFLICT (role, counter) DO UPDATE SET total = m.total + excluded.total
    )
    SELECT count(*), count(pg_notify(worker_wake_channel(r.worker_id), 'abort:' || r.id))
    INTO v_count, v_notified
    FROM recovered r;
    RETURN v_count;
END;
$$;

COMMIT;
