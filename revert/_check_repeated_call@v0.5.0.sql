-- Revert taskpool:_check_repeated_call from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.3.0 body, whose DETAIL named the task's current worker and attempt to any caller.
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
DECLARE
    v_task worker_tasks;
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

    RAISE EXCEPTION USING
        ERRCODE = '55000',
        MESSAGE = format('task %s attempt %s is not owned by worker %L',
                         _check_repeated_call.task_id, _check_repeated_call.attempt, _check_repeated_call.worker_id),
        DETAIL = format('The task is %s at attempt %s%s.', v_task.status, v_task.attempt,
                        CASE WHEN v_task.worker_id IS NOT NULL
                             THEN format(', worker %L', v_task.worker_id) ELSE '' END),
        HINT = 'The worker lost this attempt (recovered as stale, finished, or re-claimed): nothing was changed.';
END;
$$;

REVOKE ALL ON FUNCTION _check_repeated_call(bigint, text, integer, text) FROM PUBLIC;

COMMIT;
