-- Deploy taskpool:fail_task to pg
-- requires: fail_task@v0.5.0
-- requires: _lock_owned_task
-- requires: _retry_delay
-- requires: taskpool_worker
-- requires: worker_task_attempts_error_details
-- requires: worker_task_attempts_error_data
-- requires: worker_tasks_own_backoff
-- requires: claim_token

BEGIN;
SET client_min_messages = 'warning';

-- error_data (at the end) and claim_token (after the attempt) make a new signature: drop the old
-- one rather than overload it.
DROP FUNCTION fail_task(bigint, text, integer, text, boolean, timestamptz, text);

-- fail_task
-- Records a failed attempt: back to pending after a backoff while retries remain, else failed.
CREATE FUNCTION fail_task(
    task_id       bigint,
    worker_id     text,
    attempt       integer,
    claim_token   uuid,
    error_message text,
    retryable     boolean     DEFAULT true,
    retry_at      timestamptz DEFAULT NULL,
    error_details text        DEFAULT NULL,
    error_data    jsonb       DEFAULT NULL)
RETURNS worker_tasks
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT status, retry_count, scheduled_for
--   FROM fail_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10', 'HTTP 503 from platform');
--   SELECT status FROM fail_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10', 'store closed',
--                                retryable := false);
--   SELECT status FROM fail_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10', 'KeyError: ''price''',
--                                error_details := E'Traceback (most recent call last):\n...');
--   SELECT status FROM fail_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10',
--                                'command exited with status 3: no such store',
--                                error_data := '{"exit_code": 3, "stderr_tail": "no such store"}');
-- Retryable and retry_count < max_retries: pending again at retry_at, or after _retry_delay:
-- least(backoff_base * backoff_multiplier^retry_count, backoff_cap), spread by the role's
-- backoff_jitter, with the task's own backoff_base and backoff_cap where it has them; retry_count + 1.
-- Otherwise failed. A task whose cancel was requested ends cancelled. Raises 55000 when the
-- worker no longer holds the claim (attempt and claim_token, as the claim returned them), and
-- 22023 for a retry_at that is infinite or past year 9999 (the task would never run again;
-- enqueue refuses such a scheduled_for too).
-- error_details (pyworker sends the handler's traceback) go with the attempt into
-- worker_task_attempts, at most 20000 characters: a longer text keeps its first 4000 characters
-- and its end, where a traceback names the error, with a line saying how many were cut.
-- error_data (pyworker: a command's exit code, signal and stderr tail, a Python handler's
-- exception type) goes with the attempt too, into worker_task_attempts.error_data: a JSON object
-- of at most 16384 bytes (as text), else 22023 and nothing is recorded. NULL: none.
DECLARE
    v_now           timestamptz := taskpool_now();
    v_task          worker_tasks;
    v_status        text;
    v_details       text := nullif(fail_task.error_details, '');
    v_details_limit CONSTANT integer := 20000;
    v_details_head  CONSTANT integer := 4000;
    -- Room for the line that says how many characters were cut.
    v_details_tail  CONSTANT integer := v_details_limit - v_details_head - 64;
    v_data_limit    CONSTANT integer := 16384;
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
    IF fail_task.error_data IS NOT NULL THEN
        IF jsonb_typeof(fail_task.error_data) <> 'object' THEN
            RAISE EXCEPTION USING
                ERRCODE = '22023',
                MESSAGE = format('error_data must be a JSON object, not %s', jsonb_typeof(fail_task.error_data)),
                HINT = 'Pass an object such as {"exit_code": 3}, or omit error_data.';
        END IF;
        IF octet_length(fail_task.error_data::text) > v_data_limit THEN
            RAISE EXCEPTION USING
                ERRCODE = '22023',
                MESSAGE = format('error_data must be at most %s bytes as text, not %s',
                                 v_data_limit, octet_length(fail_task.error_data::text)),
                HINT = 'Keep the tails of the output short; the full traceback goes in error_details.';
        END IF;
    END IF;

    v_task := _lock_owned_task(fail_task.task_id, fail_task.worker_id, fail_task.attempt, fail_task.claim_token);
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
            THEN greatest(v_now, coalesce(fail_task.retry_at, v_now + _retry_delay(t.role, t.retry_count, t.backoff_base, t.backoff_cap)))
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
    IF v_details IS NOT NULL OR fail_task.error_data IS NOT NULL THEN
        UPDATE worker_task_attempts a
        SET error_details = v_details,
            error_data = fail_task.error_data
        WHERE a.task_id = v_task.id AND a.attempt = v_task.attempt;
    END IF;
    RETURN v_task;
END;
$$;

REVOKE ALL ON FUNCTION fail_task(bigint, text, integer, uuid, text, boolean, timestamptz, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fail_task(bigint, text, integer, uuid, text, boolean, timestamptz, text, jsonb) TO taskpool_worker;
COMMENT ON FUNCTION fail_task(bigint, text, integer, uuid, text, boolean, timestamptz, text, jsonb) IS
    'Records a failed attempt: back to pending after a backoff while retries remain, else failed.';

COMMIT;
