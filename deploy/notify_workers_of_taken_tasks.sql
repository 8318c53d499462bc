-- Deploy taskpool:notify_workers_of_taken_tasks to pg
-- requires: worker_wake_channel
-- requires: recover_stale_tasks
-- requires: tg_dispensaries__settle_tasks

BEGIN;
SET client_min_messages = 'warning';

-- A cancel or a stale recovery tells the worker that holds the task at once, on the worker's
-- own wake channel (worker_wake_channel), with the payload 'abort:<task id>'; the worker then
-- heartbeats its tasks at once, and the heartbeat's answer aborts the handler. Without it a
-- handler learned of a cancel only at its worker's next heartbeat, up to its interval (30 s by
-- default) later, while a cancelled crawl went on hitting the platform. The heartbeat stays the
-- fallback: a worker that does not listen (pooled, no listen URL) or missed the notification
-- still learns at its next one. pg_notify is sent at commit, so a cancel rolled back tells
-- nobody. A role is a lower-case identifier, so no role's wake-up payload contains ':'.

-- tg_worker_tasks__notify_cancel_requested
-- A claimed or running task's cancel requested (cancel_task, cancel_tasks, a store deleted): tell its worker now.
CREATE FUNCTION tg_worker_tasks__notify_cancel_requested()
RETURNS trigger
LANGUAGE plpgsql
-- worker_wake_channel is the owner's and taskpool_worker's: whoever cancels reaches the worker.
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    PERFORM pg_notify(worker_wake_channel(NEW.worker_id), 'abort:' || NEW.id);
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION tg_worker_tasks__notify_cancel_requested() FROM PUBLIC;

-- Only statements that set cancel_requested_at fire it: no claim, heartbeat or completion does.
CREATE TRIGGER _900_notify_cancel_requested
    AFTER UPDATE OF cancel_requested_at ON worker_tasks
    FOR EACH ROW
    WHEN (OLD.cancel_requested_at IS NULL AND NEW.cancel_requested_at IS NOT NULL AND NEW.worker_id IS NOT NULL)
    EXECUTE FUNCTION tg_worker_tasks__notify_cancel_requested();

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

REVOKE ALL ON FUNCTION _recover_stale_tasks(integer, text) FROM PUBLIC;

COMMENT ON FUNCTION cancel_task(bigint) IS $$Cancels a task: a pending one at once; a claimed or running one's worker is notified and aborts its handler (at its next heartbeat if it does not listen).
Example:
  SELECT status, cancel_requested_at FROM cancel_task(42);$$;
COMMENT ON FUNCTION cancel_tasks(text, text, bigint, text, text, timestamptz, timestamptz, integer) IS $$Cancels up to max_tasks (1000) pending, claimed or running tasks a filter selects (tasks_matching's filters), as cancel_task does: pending ones now, the others' workers notified; returns how many. Call again until it returns less than max_tasks.
Example:
  SELECT cancel_tasks(role := 'product_refresh', store := 42);$$;

COMMIT;
