-- Revert taskpool:retry_task from pg: back to the v0.8.0 body, which reads worker_tasks alone

BEGIN;
SET client_min_messages = 'warning';

-- retry_task
-- Puts a failed or cancelled task back to pending now, with a fresh retry budget.
CREATE OR REPLACE FUNCTION retry_task(task_id bigint)
RETURNS worker_tasks
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT status, retry_count FROM retry_task(42);   -- pending, 0
-- Its attempt history stays. Refused (55000) for a task that is not failed or cancelled or has
-- spent its attempt counter, (22023) for a task of a role that needs a store when the task has
-- none (its store was deleted), and (23505) when another active task holds its dedupe key,
-- even one that took the key while this call ran.
DECLARE
    -- The attempt column is an integer: a task at its largest value can never be claimed again.
    c_last_attempt constant integer := 2147483647;
    v_task       worker_tasks;
    v_holder     bigint;
    v_constraint text;
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
    IF v_task.attempt = c_last_attempt THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('task %s cannot be retried: it has used attempt %s, the last the attempt counter holds',
                             v_task.id, v_task.attempt),
            HINT = 'Enqueue a new task with its payload instead.';
    END IF;
    IF v_task.dispensary_id IS NULL AND EXISTS (SELECT FROM task_roles r WHERE r.role = v_task.role AND r.requires_store) THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('task %s cannot be retried: role %s needs a dispensary_id and the task has none',
                             v_task.id, v_task.role),
            HINT = 'Its store was deleted (or the role came to require one later); enqueue a new task for a store.';
    END IF;

    SELECT t.id INTO v_holder
    FROM worker_tasks t
    WHERE t.dedupe_key = v_task.dedupe_key AND t.status IN ('pending', 'claimed', 'running');
    IF NOT FOUND THEN
        BEGIN
            UPDATE worker_tasks t
            SET status = 'pending', retry_count = 0, scheduled_for = taskpool_now()
            WHERE t.id = v_task.id
            RETURNING t.* INTO v_task;
            RETURN v_task;
        EXCEPTION WHEN unique_violation THEN
            -- Another session made a task with this key active after the look above; the index
            -- made this update wait for its commit, so a fresh look finds it.
            GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
            IF v_constraint IS DISTINCT FROM 'worker_tasks_one_active_per_dedupe_key_idx' THEN
                RAISE;
            END IF;
            SELECT t.id INTO v_holder
            FROM worker_tasks t
            WHERE t.dedupe_key = v_task.dedupe_key AND t.status IN ('pending', 'claimed', 'running');
        END;
    END IF;
    RAISE EXCEPTION USING
        ERRCODE = '23505',
        MESSAGE = format('task %s cannot be retried: %s with dedupe key %L is active',
                         v_task.id, coalesce('task ' || v_holder, 'another task'), v_task.dedupe_key);
END;
$$;

REVOKE ALL ON FUNCTION retry_task(bigint) FROM PUBLIC;

COMMIT;
