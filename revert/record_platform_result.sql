-- Revert taskpool:record_platform_result from pg: back to the body of deploy/record_platform_result@v0.8.0.sql

BEGIN;
SET client_min_messages = 'warning';

-- record_platform_result
-- Feeds the circuit breaker one request's outcome; returns the circuit's state, 'closed' or 'open'.
CREATE OR REPLACE FUNCTION record_platform_result(platform text, succeeded boolean, error_message text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT record_platform_result('dutchie', true);
--   SELECT record_platform_result('dutchie', false, 'HTTP 500');   -- the 5th in a row: 'open'
-- A success resets the failure streak and closes an open circuit. A failure that brings the
-- streak to failure_threshold opens the circuit for the cooldown (a failure after the cooldown
-- opens it again at once). Each opening and closing is kept in platform_events.
DECLARE
    v_now      timestamptz := taskpool_now();
    v_row      platform_governance := _lock_platform(record_platform_result.platform);
    v_failures integer;
BEGIN
    IF record_platform_result.succeeded IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'succeeded is required: true or false';
    END IF;

    IF record_platform_result.succeeded THEN
        IF v_row.open_until IS NOT NULL THEN
            INSERT INTO platform_events (platform, event, at, consecutive_failures)
            VALUES (v_row.platform, 'closed', v_now, v_row.consecutive_failures);
        END IF;
        UPDATE platform_governance g
        SET consecutive_failures = 0, open_until = NULL, last_success_at = v_now
        WHERE g.platform = v_row.platform;
        RETURN 'closed';
    END IF;

    v_failures := v_row.consecutive_failures + 1;
    IF v_failures >= v_row.failure_threshold AND NOT coalesce(v_row.open_until > v_now, false) THEN
        v_row.open_until := v_now + v_row.cooldown;
        INSERT INTO platform_events (platform, event, at, consecutive_failures, error_message)
        VALUES (v_row.platform, 'opened', v_now, v_failures, left(record_platform_result.error_message, 1000));
    END IF;
    UPDATE platform_governance g
    SET consecutive_failures = v_failures,
        open_until = v_row.open_until,
        last_failure_at = v_now,
        last_error = left(record_platform_result.error_message, 1000)
    WHERE g.platform = v_row.platform;
    RETURN CASE WHEN v_row.open_until > v_now THEN 'open' ELSE 'closed' END;
END;
$$;

REVOKE ALL ON FUNCTION record_platform_result(text, boolean, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION record_platform_result(text, boolean, text) TO taskpool_worker;

COMMIT;
