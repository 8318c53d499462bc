-- Deploy taskpool:start_task to pg
-- requires: start_task@v0.5.0
-- requires: _check_repeated_call
-- requires: claim_token

BEGIN;
SET client_min_messages = 'warning';

DROP FUNCTION start_task(bigint, text, integer);

-- start_task
-- Marks a claimed task running (claimed -> running) while the worker still holds that claim.
CREATE FUNCTION start_task(task_id bigint, worker_id text, attempt integer, claim_token uuid)
RETURNS worker_tasks
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT status, started_at FROM start_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10');
-- attempt and claim_token are the claim's, as claim_task returned them. Optional: complete_task
-- and fail_task also accept a claimed task. Calling it again for a task already running under
-- the same claim returns it unchanged (a retried call is safe).
DECLARE
    v_now  timestamptz := taskpool_now();
    v_task worker_tasks;
BEGIN
    UPDATE worker_tasks t
    SET status = 'running', started_at = v_now, last_heartbeat_at = v_now
    WHERE t.id = start_task.task_id
      AND t.worker_id = start_task.worker_id
      AND t.attempt = start_task.attempt
      AND t.claim_token = start_task.claim_token
      AND t.status = 'claimed'
    RETURNING t.* INTO v_task;
    IF NOT FOUND THEN
        v_task := _check_repeated_call(start_task.task_id, start_task.worker_id, start_task.attempt,
                                       start_task.claim_token, 'running');
    END IF;
    RETURN v_task;
END;
$$;

REVOKE ALL ON FUNCTION start_task(bigint, text, integer, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION start_task(bigint, text, integer, uuid) TO taskpool_worker;

COMMIT;
