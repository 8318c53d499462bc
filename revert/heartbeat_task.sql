-- Revert taskpool:heartbeat_task from pg

BEGIN;
SET client_min_messages = 'warning';

-- The function as it was before the claim_token, by its old signature.
DROP FUNCTION heartbeat_task(bigint, text, integer, uuid);

-- heartbeat_task
-- Keeps a worker's task alive and answers what the worker should do: continue, cancel_requested, lost or not_found.
CREATE FUNCTION heartbeat_task(task_id bigint, worker_id text, attempt integer)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT heartbeat_task(42, 'w1', 1);   -- 'continue'
-- continue: keep going. cancel_requested: an operator cancelled the task; stop, then call
-- fail_task (the task ends cancelled). lost: this attempt is no longer the worker's (recovered
-- as stale, re-claimed, finished): stop and record nothing. not_found: the task is gone.
-- Returns instead of raising, because losing a task is news for the worker, not a mistake.
DECLARE
    v_cancel_requested_at timestamptz;
BEGIN
    IF heartbeat_task.task_id IS NULL OR heartbeat_task.worker_id IS NULL OR heartbeat_task.attempt IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22004',
            MESSAGE = 'task_id, worker_id and attempt are all required',
            HINT = 'Pass the id, worker_id and attempt of the row claim_task returned.';
    END IF;

    UPDATE worker_tasks t
    SET last_heartbeat_at = taskpool_now()
    WHERE t.id = heartbeat_task.task_id
      AND t.worker_id = heartbeat_task.worker_id
      AND t.attempt = heartbeat_task.attempt
      AND t.status IN ('claimed', 'running')
    RETURNING t.cancel_requested_at INTO v_cancel_requested_at;
    IF FOUND THEN
        RETURN CASE WHEN v_cancel_requested_at IS NULL THEN 'continue' ELSE 'cancel_requested' END;
    END IF;
    IF EXISTS (SELECT FROM worker_tasks t WHERE t.id = heartbeat_task.task_id) THEN
        RETURN 'lost';
    END IF;
    RETURN 'not_found';
END;
$$;

REVOKE ALL ON FUNCTION heartbeat_task(bigint, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION heartbeat_task(bigint, text, integer) TO taskpool_worker;

COMMIT;
