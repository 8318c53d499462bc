-- Deploy taskpool:mark_task_completed to pg
-- requires: task_status_transition_allowed
-- requires: worker_wake_channel
-- requires: claim_token
-- requires: after_status_change_parents_and_waiters

BEGIN;
SET client_min_messages = 'warning';

-- An operator may complete a task no worker took yet (the work was done some other way).
INSERT INTO task_status_transitions (from_status, to_status, meaning) VALUES
    ('pending', 'completed', 'mark_task_completed by an operator: done without a worker');

-- mark_task_completed
-- Completes a pending, claimed or running task by hand, with a result, without a worker.
CREATE FUNCTION mark_task_completed(task_id bigint, result jsonb DEFAULT NULL)
RETURNS worker_tasks
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT status FROM mark_task_completed(42, '{"done_by": "hand"}');
-- A completion like a worker's: the result is stored, its chain follows (task_role_chains), and
-- whoever waits for the task hears. A claimed or running task's claim ends here: claim_token is
-- cleared, so the worker that held it can never complete or fail it afterwards (its calls raise
-- 55000, its heartbeat answers lost), and it is told at once (abort:<id> on its wake channel).
-- The row keeps that worker_id and attempt: who held the task when it was completed by hand.
-- A completed, failed or cancelled task is refused (55000) and nothing changes; an unknown id
-- raises P0002.
DECLARE
    v_task   worker_tasks;
    v_holder text;
BEGIN
    IF mark_task_completed.task_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'task_id is required';
    END IF;

    SELECT t.* INTO v_task FROM worker_tasks t WHERE t.id = mark_task_completed.task_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'P0002', MESSAGE = format('task %s does not exist', mark_task_completed.task_id);
    END IF;
    IF v_task.status NOT IN ('pending', 'claimed', 'running') THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('task %s is %s and cannot be marked completed', v_task.id, v_task.status),
            HINT = 'Only pending, claimed or running tasks can be; retry_task puts a failed or cancelled task back to pending.';
    END IF;
    v_holder := v_task.worker_id;

    UPDATE worker_tasks t
    SET status = 'completed', result = mark_task_completed.result, claim_token = NULL
    WHERE t.id = v_task.id
    RETURNING t.* INTO v_task;

    IF v_holder IS NOT NULL THEN
        PERFORM pg_notify(worker_wake_channel(v_holder), 'abort:' || v_task.id);
    END IF;
    RETURN v_task;
END;
$$;

REVOKE ALL ON FUNCTION mark_task_completed(bigint, jsonb) FROM PUBLIC;

COMMENT ON FUNCTION mark_task_completed(bigint, jsonb) IS $$Completes a pending, claimed or running task by hand with a result, without a worker; the worker that held it can no longer complete or fail it. A finished task is refused (55000).
Example:
  SELECT status FROM mark_task_completed(42, '{"done_by": "hand"}');$$;

COMMIT;
