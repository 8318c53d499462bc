-- Deploy taskpool:cancel_task to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- cancel_task
-- Cancels a task: a pending one at once; a claimed or running one at its worker's next heartbeat.
CREATE FUNCTION cancel_task(task_id bigint)
RETURNS worker_tasks
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT status, cancel_requested_at FROM cancel_task(42);
-- A claimed or running task keeps its status with cancel_requested_at set: its heartbeat
-- answers cancel_requested, and the attempt ends cancelled however the worker ends it (a
-- completion that was already under way still counts). Finished tasks cannot be cancelled
-- (55000); cancelling twice is harmless.
DECLARE
    v_task worker_tasks;
BEGIN
    IF cancel_task.task_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'task_id is required';
    END IF;

    SELECT t.* INTO v_task FROM worker_tasks t WHERE t.id = cancel_task.task_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'P0002', MESSAGE = format('task %s does not exist', cancel_task.task_id);
    END IF;

    CASE v_task.status
    WHEN 'pending' THEN
        UPDATE worker_tasks t SET status = 'cancelled' WHERE t.id = v_task.id RETURNING t.* INTO v_task;
    WHEN 'claimed', 'running' THEN
        UPDATE worker_tasks t SET cancel_requested_at = coalesce(t.cancel_requested_at, taskpool_now())
        WHERE t.id = v_task.id RETURNING t.* INTO v_task;
    ELSE
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('task %s is %s and cannot be cancelled', v_task.id, v_task.status),
            HINT = 'Only pending, claimed or running tasks can be cancelled.';
    END CASE;
    RETURN v_task;
END;
$$;

REVOKE ALL ON FUNCTION cancel_task(bigint) FROM PUBLIC;

COMMIT;
