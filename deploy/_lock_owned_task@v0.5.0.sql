-- Deploy taskpool:_lock_owned_task to pg
-- requires: _check_repeated_call

BEGIN;
SET client_min_messages = 'warning';

-- _lock_owned_task
-- Locks and returns the task while worker_id owns that attempt of it, else raises (the fence).
CREATE FUNCTION _lock_owned_task(task_id bigint, worker_id text, attempt integer)
RETURNS worker_tasks
LANGUAGE plpgsql
AS $$
DECLARE
    v_task worker_tasks;
BEGIN
    SELECT * INTO v_task
    FROM worker_tasks t
    WHERE t.id = _lock_owned_task.task_id
      AND t.worker_id = _lock_owned_task.worker_id
      AND t.attempt = _lock_owned_task.attempt
      AND t.status IN ('claimed', 'running')
    FOR UPDATE;
    IF NOT FOUND THEN
        -- No status counts as done: fail, snooze and release are not repeated safely.
        PERFORM _check_repeated_call(_lock_owned_task.task_id, _lock_owned_task.worker_id,
                                     _lock_owned_task.attempt, NULL);
    END IF;
    RETURN v_task;
END;
$$;

REVOKE ALL ON FUNCTION _lock_owned_task(bigint, text, integer) FROM PUBLIC;

COMMIT;
