-- Deploy taskpool:acquire_platform_request to pg
-- requires: acquire_platform_request@v0.8.0
-- requires: _platform_tokens
-- requires: _platform_clock

BEGIN;
SET client_min_messages = 'warning';

-- acquire_platform_request
-- Asks to send one request to a platform: 0 means go now, more is the seconds to wait before asking again.
CREATE OR REPLACE FUNCTION acquire_platform_request(platform text)
RETURNS double precision
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT acquire_platform_request('dutchie');   -- 0: send it; 0.5: wait half a second, ask again
-- Every handler request to a platform goes through here, so the limit holds across all workers.
-- Raises 55000 while the platform's circuit is open: the attempt should fail and be retried.
-- A wait answered takes nothing: the caller asks again. reserve_platform_request instead takes
-- the next token ahead and says how long to wait for it, so that nobody asks twice.
DECLARE
    v_row    platform_governance := _lock_platform(acquire_platform_request.platform);
    -- read once the row is ours: the clock at the transaction's start may be older than the
    -- tokens_at the lock's last holder wrote, and refilling from it would count those seconds twice
    v_now    timestamptz := greatest(_platform_clock(), v_row.tokens_at);
    v_tokens double precision := _platform_tokens(v_row.tokens, v_row.tokens_at, v_row.requests_per_minute, v_now);
    v_wait   double precision := 0;
BEGIN
    IF v_row.open_until > v_now THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('platform %s is paused until %s: its circuit opened after %s consecutive failures',
                             v_row.platform, v_row.open_until, v_row.consecutive_failures),
            HINT = 'The first success after the cooldown closes the circuit.';
    END IF;

    IF v_tokens >= 1 THEN
        v_tokens := v_tokens - 1;
    ELSE
        v_wait := (1 - v_tokens) * 60.0 / v_row.requests_per_minute;
    END IF;

    -- requests_total counts the requests let through (a wait answered is no request yet)
    UPDATE platform_governance g
    SET tokens = v_tokens, tokens_at = v_now, requests_total = g.requests_total + (v_wait = 0)::integer
    WHERE g.platform = v_row.platform;
    RETURN v_wait;
END;
$$;

REVOKE ALL ON FUNCTION acquire_platform_request(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION acquire_platform_request(text) TO taskpool_worker;

COMMIT;
