-- Revert taskpool:snooze_task from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.3.0 body, which accepted an infinite until.

-- snooze_task
-- Puts a worker's task back to pending until a given time without spending a retry.
CREATE OR REPLACE FUNCTION snooze_task(task_id bigint, worker_id text, attempt integer, until timestamptz)
RETURNS worker_tasks
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT status, scheduled_for FROM snooze_task(42, 'w1', 1, now() + interval '15 minutes');
-- A time in the past means now. A task whose cancel was requested ends cancelled instead.
-- Raises 55000 when the worker no longer owns the attempt.
DECLARE
    v_task worker_tasks;
BEGIN
    IF snooze_task.until IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'until is required: the time the task may run again';
    END IF;

    v_task := _lock_owned_task(snooze_task.task_id, snooze_task.worker_id, snooze_task.attempt);
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

REVOKE ALL ON FUNCTION snooze_task(bigint, text, integer, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snooze_task(bigint, text, integer, timestamptz) TO taskpool_worker;

COMMIT;
