-- Deploy taskpool:start_task to pg
-- requires: _check_repeated_call
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- start_task
-- Marks a claimed task running (claimed -> running) while the worker still owns that attempt.
CREATE FUNCTION start_task(task_id bigint, worker_id text, attempt integer)
RETURNS worker_tasks
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT status, started_at FROM start_task(42, 'w1', 1);
-- Optional: complete_task and fail_task also accept a claimed task. Calling it again for a task
-- already running under the same attempt returns it unchanged (a retried call is safe).
DECLARE
    v_now  timestamptz := taskpool_now();
    v_task worker_tasks;
BEGIN
    UPDATE worker_tasks t
    SET status = 'running', started_at = v_now, last_heartbeat_at = v_now
    WHERE t.id = start_task.task_id
      AND t.worker_id = start_task.worker_id
      AND t.attempt = start_task.attempt
      AND t.status = 'claimed'
    RETURNING t.* INTO v_task;
    IF NOT FOUND THEN
        v_task := _check_repeated_call(start_task.task_id, start_task.worker_id, start_task.attempt, 'running');
    END IF;
    RETURN v_task;
END;
$$;

REVOKE ALL ON FUNCTION start_task(bigint, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION start_task(bigint, text, integer) TO taskpool_worker;

COMMIT;
