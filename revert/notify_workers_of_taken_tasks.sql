-- Revert taskpool:notify_workers_of_taken_tasks from pg

BEGIN;
SET client_min_messages = 'warning';

DROP TRIGGER _900_notify_cancel_requested ON worker_tasks;
DROP FUNCTION tg_worker_tasks__notify_cancel_requested();

-- Back to recover_stale_tasks' body, which notified nobody.

-- _recover_stale_tasks
-- recover_stale_tasks' work, for every role or for one: the tick recovers them all, a worker its
-- own role's (recover_stale_tasks_of_role).
CREATE OR REPLACE FUNCTION _recover_stale_tasks(threshold_minutes integer, only_role text)
RETURNS integer
LANGUAGE plpgsql
AS $$
-- A stale task goes back to pending (retry_count + 1, ready now) while retries remain, else
-- to failed; one whose cancel was requested ends cancelled. Never left claimed or running.
-- Each recovery is counted in task_metric_totals (stale_recovered, per role): the tick's
-- business, not the hot path's, so one counter row per role is cheap here.
DECLARE
    v_now   timestamptz := taskpool_now();
    v_count integer;
BEGIN
    WITH
    -- silent tasks, locked; one a worker is touching right now (a heartbeat, a completion) is
    -- skipped, as its worker is evidently alive
    stale AS (
        SELECT t.id,
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
        RETURNING t.role
    ),
    counted AS (
        INSERT INTO task_metric_totals AS m (role, counter, total)
        SELECT r.role, 'stale_recovered', count(*) FROM recovered r GROUP BY r.role
        ON CONFLICT (role, counter) DO UPDATE SET total = m.total + excluded.total
    )
    SELECT count(*) INTO v_count FROM recovered;
    RETURN v_count;
END;
$$;

REVOKE ALL ON FUNCTION _recover_stale_tasks(integer, text) FROM PUBLIC;

COMMENT ON FUNCTION cancel_task(bigint) IS $$Cancels a task: a pending one at once; a claimed or running one at its worker's next heartbeat.
Example:
  SELECT status, cancel_requested_at FROM cancel_task(42);$$;
COMMENT ON FUNCTION cancel_tasks(text, text, bigint, text, text, timestamptz, timestamptz, integer) IS $$Cancels up to max_tasks (1000) pending, claimed or running tasks a filter selects (tasks_matching's filters), as cancel_task does: pending ones now, the others at their next heartbeat; returns how many. Call again until it returns less than max_tasks.
Example:
  SELECT cancel_tasks(role := 'product_refresh', store := 42);$$;

COMMIT;
