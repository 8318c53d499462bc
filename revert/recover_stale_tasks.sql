-- Revert taskpool:recover_stale_tasks from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.5.0 body, which counted no recovery and recovered every role's tasks itself.

-- recover_stale_tasks
-- Takes back claimed or running tasks whose worker stopped heartbeating; returns how many.
CREATE OR REPLACE FUNCTION recover_stale_tasks(threshold_minutes integer DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT recover_stale_tasks(10);   -- no heartbeat for 10 minutes
--   SELECT recover_stale_tasks();     -- each role's task_roles.stale_threshold
-- A stale task goes back to pending (retry_count + 1, ready now) while retries remain, else
-- to failed; one whose cancel was requested ends cancelled. Never left claimed or running.
DECLARE
    v_now   timestamptz := taskpool_now();
    v_count integer;
BEGIN
    IF recover_stale_tasks.threshold_minutes <= 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('threshold_minutes must be positive, not %s', recover_stale_tasks.threshold_minutes),
            HINT = 'Omit it to use each role''s stale_threshold.';
    END IF;

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
          AND t.last_heartbeat_at < v_now - coalesce(make_interval(mins => recover_stale_tasks.threshold_minutes),
                                                     r.stale_threshold)
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
        RETURNING t.id
    )
    SELECT count(*) INTO v_count FROM recovered;
    RETURN v_count;
END;
$$;

REVOKE ALL ON FUNCTION recover_stale_tasks(integer) FROM PUBLIC;

DROP FUNCTION _recover_stale_tasks(integer, text);

COMMIT;
