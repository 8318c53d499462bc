-- Deploy taskpool:snooze_task to pg
-- requires: snooze_task@v0.5.0
-- requires: _lock_owned_task

BEGIN;
SET client_min_messages = 'warning';

DROP FUNCTION snooze_task(bigint, text, integer, timestamptz);

-- snooze_task
-- Puts a worker's task back to pending until a given time without spending a retry.
CREATE FUNCTION snooze_task(task_id bigint, worker_id text, attempt integer, claim_token uuid, until timestamptz)
RETURNS worker_tasks
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT status, scheduled_for FROM snooze_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10',
--                                                 now() + interval '15 minutes');
-- A time in the past means now. A task whose cancel was requested ends cancelled instead.
-- Raises 55000 when the worker no longer holds the claim (attempt and claim_token), and 22023
-- for a time that is infinite or past year 9999 (the task would never run again; enqueue
-- refuses them too).
DECLARE
    v_task worker_tasks;
BEGIN
    IF snooze_task.until IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'until is required: the time the task may run again';
    END IF;
    IF NOT isfinite(snooze_task.until) OR snooze_task.until >= timestamptz '10000-01-01 00:00:00+00' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('until must be a finite time before year 10000, not %s', snooze_task.until),
            HINT = 'To stop a task for good, fail it with retryable := false, or cancel it.';
    END IF;

    v_task := _lock_owned_task(snooze_task.task_id, snooze_task.worker_id, snooze_task.attempt,
                               snooze_task.claim_token);
    UPDATE worker_tasks t
    SET status = CASE WHEN t.cancel_requested_at IS NULL THEN 'pending' ELSE 'cancelled' END,
        scheduled_for = CASE WHEN t.cancel_requested_at IS NULL
                             THEN greatest(snooze_task.until, taskpool_now())
                             ELSE t.scheduled_for END
    WHERE t.id = v_task.id
    RETURNING t.* INTO v_task;
    RETURN v_task;
END;
$$;

REVOKE ALL ON FUNCTION snooze_task(bigint, text, integer, uuid, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snooze_task(bigint, text, integer, uuid, timestamptz) TO taskpool_worker;

COMMIT;
