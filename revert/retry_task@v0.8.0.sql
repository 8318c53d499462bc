-- Revert taskpool:retry_task from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.3.0 body, which retried a per-store task without a store, a task whose attempt
-- counter is spent, and raised a bare unique violation on losing a race for the dedupe key.

-- retry_task
-- Puts a failed or cancelled task back to pending now, with a fresh retry budget.
CREATE OR REPLACE FUNCTION retry_task(task_id bigint)
RETURNS worker_tasks
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT status, retry_count FROM retry_task(42);   -- pending, 0
-- Its attempt history stays. Refused (55000) for a task that is not failed or cancelled, and
-- (23505) when another active task now holds its dedupe key.
DECLARE
    v_task   worker_tasks;
    v_holder bigint;
BEGIN
    IF retry_task.task_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'task_id is required';
    END IF;

    SELECT t.* INTO v_task FROM worker_tasks t WHERE t.id = retry_task.task_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'P0002', MESSAGE = format('task %s does not exist', retry_task.task_id);
    END IF;
    IF v_task.status NOT IN ('failed', 'cancelled') THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('task %s is %s and cannot be retried', v_task.id, v_task.status),
            HINT = 'Only failed or cancelled tasks can be retried.';
    END IF;

    SELECT t.id INTO v_holder
    FROM worker_tasks t
    WHERE t.dedupe_key = v_task.dedupe_key AND t.status IN ('pending', 'claimed', 'running');
    IF FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '23505',
            MESSAGE = format('task %s cannot be retried: task %s with dedupe key %L is active', v_task.id, v_holder, v_task.dedupe_key);
    END IF;

    UPDATE worker_tasks t
    SET status = 'pending', retry_count = 0, scheduled_for = taskpool_now()
    WHERE t.id = v_task.id
    RETURNING t.* INTO v_task;
    RETURN v_task;
END;
$$;

REVOKE ALL ON FUNCTION retry_task(bigint) FROM PUBLIC;

COMMIT;
