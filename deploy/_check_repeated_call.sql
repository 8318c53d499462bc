-- Deploy taskpool:_check_repeated_call to pg
-- requires: _check_repeated_call@v0.5.0
-- requires: claim_token

BEGIN;
SET client_min_messages = 'warning';

DROP FUNCTION _check_repeated_call(bigint, text, integer, text);

-- _check_repeated_call
-- After a fenced call matched nothing: the task when its owner already took it to done_status, else the reason it is not owned.
CREATE FUNCTION _check_repeated_call(task_id bigint, worker_id text, attempt integer, claim_token uuid, done_status text)
RETURNS worker_tasks
LANGUAGE plpgsql
AS $$
-- A worker whose connection dropped does not know whether its call committed, and calls again.
-- If the first call did commit, the task is now in done_status under the same worker, attempt
-- and claim_token: the repeat answers with the task instead of an error. Anything else is a
-- worker acting on a claim it does not hold, and raises. The token tells a repeat from a claim
-- the database forgot (lost WAL after a failover) whose attempt number a new claim took again.
-- The refusal's DETAIL never names another worker's worker_id or attempt, and never a token: the
-- owner is told the task's state; a worker that held an earlier claim is told how it ended.
DECLARE
    v_task            worker_tasks;
    v_earlier_outcome text;
BEGIN
    IF _check_repeated_call.task_id IS NULL OR _check_repeated_call.worker_id IS NULL
       OR _check_repeated_call.attempt IS NULL OR _check_repeated_call.claim_token IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22004',
            MESSAGE = 'task_id, worker_id, attempt and claim_token are all required',
            HINT = 'Pass the id, worker_id, attempt and claim_token of the row the claim returned.';
    END IF;

    SELECT * INTO v_task FROM worker_tasks t WHERE t.id = _check_repeated_call.task_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002',
            MESSAGE = format('task %s does not exist', _check_repeated_call.task_id);
    END IF;
    IF v_task.status = _check_repeated_call.done_status AND v_task.worker_id = _check_repeated_call.worker_id
       AND v_task.attempt = _check_repeated_call.attempt AND v_task.claim_token = _check_repeated_call.claim_token THEN
        RETURN v_task;
    END IF;

    IF v_task.worker_id IS DISTINCT FROM _check_repeated_call.worker_id THEN
        SELECT a.outcome INTO v_earlier_outcome
        FROM worker_task_attempts a
        WHERE a.task_id = _check_repeated_call.task_id
          AND a.attempt = _check_repeated_call.attempt
          AND a.worker_id = _check_repeated_call.worker_id
          AND a.claim_token = _check_repeated_call.claim_token;
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
        HINT = 'The worker lost this claim (recovered as stale, finished, re-claimed, or forgotten by a failover): nothing was changed.';
END;
$$;

REVOKE ALL ON FUNCTION _check_repeated_call(bigint, text, integer, uuid, text) FROM PUBLIC;

COMMIT;
