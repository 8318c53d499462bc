-- Revert taskpool:fail_task from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.5.0 signature and body, which took no error_data.
DROP FUNCTION fail_task(bigint, text, integer, uuid, text, boolean, timestamptz, text, jsonb);

-- fail_task
-- Records a failed attempt: back to pending after a backoff while retries remain, else failed.
CREATE FUNCTION fail_task(
    task_id       bigint,
    worker_id     text,
    attempt       integer,
    error_message text,
    retryable     boolean     DEFAULT true,
    retry_at      timestamptz DEFAULT NULL,
    error_details text        DEFAULT NULL)
RETURNS worker_tasks
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT status, retry_count, scheduled_for FROM fail_task(42, 'w1', 1, 'HTTP 503 from platform');
--   SELECT status FROM fail_task(42, 'w1', 1, 'store closed', retryable := false);
--   SELECT status FROM fail_task(42, 'w1', 1, 'KeyError: ''price''',
--                                error_details := E'Traceback (most recent call last):\n...');
-- Retryable and retry_count < max_retries: pending again at retry_at, or at
-- now() + least(backoff_base * 2^retry_count, backoff_cap) of the role; retry_count + 1.
-- Otherwise failed. A task whose cancel was requested ends cancelled. Raises 55000 when the
-- worker no longer owns the attempt, and 22023 for a retry_at that is infinite or past year 9999
-- (the task would never run again; enqueue refuses such a scheduled_for too).
-- error_details (pyworker sends the handler's traceback) go with the attempt into
-- worker_task_attempts, at most 20000 characters: a longer text keeps its first 4000 characters
-- and its end, where a traceback names the error, with a line saying how many were cut.
DECLARE
    v_now           timestamptz := taskpool_now();
    v_task          worker_tasks;
    v_status        text;
    v_details       text := nullif(fail_task.error_details, '');
    v_details_limit CONSTANT integer := 20000;
    v_details_head  CONSTANT integer := 4000;
    -- Room for the line that says how many characters were cut.
    v_details_tail  CONSTANT integer := v_details_limit - v_details_head - 64;
BEGIN
    IF fail_task.error_message IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'error_message is required: say why the attempt failed';
    END IF;
    IF NOT isfinite(fail_task.retry_at) OR fail_task.retry_at >= timestamptz '10000-01-01 00:00:00+00' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('retry_at must be a finite time before year 10000, not %s', fail_task.retry_at),
            HINT = 'Omit retry_at to wait the role''s backoff; fail with retryable := false to give up.';
    END IF;

    v_task := _lock_owned_task(fail_task.task_id, fail_task.worker_id, fail_task.attempt);
    v_status := CASE
        WHEN v_task.cancel_requested_at IS NOT NULL THEN 'cancelled'
        WHEN coalesce(fail_task.retryable, true) AND v_task.retry_count < v_task.max_retries THEN 'pending'
        ELSE 'failed'
    END;

    UPDATE worker_tasks t
    SET status = v_status,
        error_message = left(fail_task.error_message, 10000),
        retry_count = t.retry_count + (v_status = 'pending')::integer,
        scheduled_for = CASE
            WHEN v_status = 'pending'
            THEN greatest(v_now, coalesce(fail_task.retry_at, v_now + _retry_delay(t.role, t.retry_count)))
            ELSE t.scheduled_for
        END
    WHERE t.id = v_task.id
    RETURNING t.* INTO v_task;

    IF length(v_details) > v_details_limit THEN
        v_details := left(v_details, v_details_head)
            || format(E'\n[... %s characters cut ...]\n', length(v_details) - v_details_head - v_details_tail)
            || right(v_details, v_details_tail);
    END IF;
    -- The update above has just recorded the attempt (tg_worker_tasks__record_attempt, an AFTER
    -- trigger, fires at the end of its statement): its details go with it.
    IF v_details IS NOT NULL THEN
        UPDATE worker_task_attempts a
        SET error_details = v_details
        WHERE a.task_id = v_task.id AND a.attempt = v_task.attempt;
    END IF;
    RETURN v_task;
END;
$$;

REVOKE ALL ON FUNCTION fail_task(bigint, text, integer, text, boolean, timestamptz, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fail_task(bigint, text, integer, text, boolean, timestamptz, text) TO taskpool_worker;
COMMENT ON FUNCTION fail_task(bigint, text, integer, text, boolean, timestamptz, text) IS
    'Records a failed attempt: back to pending after a backoff while retries remain, else failed.';

COMMIT;
