-- Revert taskpool:complete_task from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.5.0 signature and body: no claim_token, follow-ups without a parent_id.
DROP FUNCTION complete_task(bigint, text, integer, uuid, jsonb, jsonb);
-- complete_task
-- Records a task's success and result, and enqueues its follow-up tasks in the same transaction.
CREATE FUNCTION complete_task(
    task_id    bigint,
    worker_id  text,
    attempt    integer,
    result     jsonb DEFAULT NULL,
    follow_ups jsonb DEFAULT NULL)
RETURNS worker_tasks
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT status FROM complete_task(42, 'w1', 1, '{"products": 118}',
--       follow_ups := '[{"role": "product_refresh", "dispensary_id": 7, "payload": {"payload_id": 9}}]');
-- follow_ups takes the specs of enqueue_tasks; a bad one fails the whole call and nothing is
-- recorded. Raises 55000 when the worker no longer owns the attempt. A repeated call for an
-- attempt this worker already completed returns the task unchanged (a retried call is safe).
DECLARE
    v_task worker_tasks;
BEGIN
    UPDATE worker_tasks t
    SET status = 'completed', result = complete_task.result
    WHERE t.id = complete_task.task_id
      AND t.worker_id = complete_task.worker_id
      AND t.attempt = complete_task.attempt
      AND t.status IN ('claimed', 'running')
    RETURNING t.* INTO v_task;
    IF NOT FOUND THEN
        -- A repeat of a completion that committed: its follow-ups are queued already.
        RETURN _check_repeated_call(complete_task.task_id, complete_task.worker_id, complete_task.attempt, 'completed');
    END IF;

    IF complete_task.follow_ups IS NOT NULL THEN
        PERFORM FROM _enqueue_specs(complete_task.follow_ups, 'follow_ups');
    END IF;
    RETURN v_task;
END;
$$;


COMMIT;
