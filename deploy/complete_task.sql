-- Deploy taskpool:complete_task to pg
-- requires: complete_task@v0.5.0
-- requires: _enqueue_specs
-- requires: _check_repeated_call
-- requires: claim_token

BEGIN;
SET client_min_messages = 'warning';

-- The claim_token goes after the attempt: a signature of its own.
DROP FUNCTION complete_task(bigint, text, integer, jsonb, jsonb);

-- complete_task
-- Records a task's success and result, and enqueues its follow-up tasks in the same transaction.
CREATE FUNCTION complete_task(
    task_id     bigint,
    worker_id   text,
    attempt     integer,
    claim_token uuid,
    result      jsonb DEFAULT NULL,
    follow_ups  jsonb DEFAULT NULL)
RETURNS worker_tasks
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT status FROM complete_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10', '{"products": 118}',
--       follow_ups := '[{"role": "product_refresh", "dispensary_id": 7, "payload": {"payload_id": 9}}]');
-- follow_ups takes the specs of enqueue_tasks; a bad one fails the whole call and nothing is
-- recorded. attempt and claim_token are the claim's, as claim_task returned them. Raises 55000
-- when the worker no longer holds that claim. A repeated call for a claim this worker already
-- completed returns the task unchanged (a retried call is safe).
-- The follow-ups remember this task as their parent_id (task_chain reads the chain back).
DECLARE
    v_task worker_tasks;
BEGIN
    UPDATE worker_tasks t
    SET status = 'completed', result = complete_task.result
    WHERE t.id = complete_task.task_id
      AND t.worker_id = complete_task.worker_id
      AND t.attempt = complete_task.attempt
      AND t.claim_token = complete_task.claim_token
      AND t.status IN ('claimed', 'running')
    RETURNING t.* INTO v_task;
    IF NOT FOUND THEN
        -- A repeat of a completion that committed: its follow-ups are queued already.
        RETURN _check_repeated_call(complete_task.task_id, complete_task.worker_id, complete_task.attempt,
                                    complete_task.claim_token, 'completed');
    END IF;

    IF complete_task.follow_ups IS NOT NULL THEN
        PERFORM FROM _enqueue_specs(complete_task.follow_ups, 'follow_ups', complete_task.task_id);
    END IF;
    RETURN v_task;
END;
$$;

REVOKE ALL ON FUNCTION complete_task(bigint, text, integer, uuid, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION complete_task(bigint, text, integer, uuid, jsonb, jsonb) TO taskpool_worker;

COMMIT;
