-- Revert taskpool:_check_repeated_call from pg

BEGIN;
SET client_min_messages = 'warning';

-- The function as it was before the claim_token, by its old signature.
DROP FUNCTION _check_repeated_call(bigint, text, integer, uuid, text);

-- _check_repeated_call
-- After a fenced call matched nothing: the task when its owner already took it to done_status, else the reason it is not owned.
CREATE OR REPLACE FUNCTION _check_repeated_call(task_id bigint, worker_id text, attempt integer, done_status text)
RETURNS worker_tasks
LANGUAGE plpgsql
AS $$
-- A worker whose connection dropped does not know whether its call committed, and calls again.
-- If the first call did commit, the task is now in done_status under the same worker and
-- attempt: the repeat answers with the task instead of an error. Anything else is a worker
-- acting on an attempt it does not own, and raises.
-- The refusal's DETAIL never names another worker's worker_id or attempt: with those two, any
-- worker session could complete, fail or snooze the task in its owner's place. The owner is told
-- the task's state; a worker that held an earlier attempt is told how that attempt ended.
DECLARE
    v_task            worker_tasks;
    v_earlier_outcome text;
BEGIN
    IF _check_repeated_call.task_id IS NULL OR _check_repeated_call.worker_id IS NULL
       OR _check_repeated_call.attempt IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22004',
            MESSAGE = 'task_id, worker_id and attempt are all required',
            HINT = 'Pass the id, worker_id and attempt of the row claim_task returned.';
    END IF;

    SELECT * INTO v_task FROM worker_tasks t WHERE t.id = _check_repeated_call.task_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002',
            MESSAGE = format('task %s does not exist', _check_repeated_call.task_id);
    END IF;
    IF v_task.status = _check_repeated_call.done_status AND v_task.worker_id = _check_repeated_call.worker_id
       AND v_task.attempt = _check_repeated_call.attempt THEN
        RETURN v_task;
    END IF;

    IF v_task.worker_id IS DISTINCT FROM _check_repeated_call.worker_id THEN
        SELECT a.outcome INTO v_earlier_outcome
        FROM worker_task_attempts a
        WHERE a.task_id = _check_repeated_call.task_id
          AND a.attempt = _check_repeated_call.attempt
          AND a.worker_id = _check_repeated_call.worker_id;
    END IF;

    RAISE EXCEPTION USING
        ERRCODE = '55000',
        MESSAGE = format('task %s attempt %s is not owned by worker %L',
                         _check_repeated_call.task_id, _check_repeated_call.attempt, _check_repeated_call.worker_id),
        DETAIL = CASE
            WHEN v_task.worker_id = _check_repeated_call.worker_id
                THEN format('The task is %s at attempt %s, worker %L.', v_task.status, v_task.attempt, v_task.worker_id)
            WHEN v_earlier_outcome IS NOT NULL
                THEN format('Attempt %s of this worker ended: %s.', _check_repeated_call.attempt, v_earlier_outcome)
            ELSE 'The task''s current worker and attempt are told to that worker only.'
        END,
        HINT = 'The worker lost this attempt (recovered as stale, finished, or re-claimed): nothing was changed.';
END;
$$;

REVOKE ALL ON FUNCTION _check_repeated_call(bigint, text, integer, text) FROM PUBLIC;

COMMIT;
