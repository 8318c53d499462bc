-- Deploy taskpool:reserve_platform_request to pg
-- requires: _platform_tokens
-- requires: _platform_clock
-- requires: _lock_platform
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- reserve_platform_request
-- Takes a platform's next token for one request, now or ahead: returns the seconds to wait before sending it (0: now).
CREATE FUNCTION reserve_platform_request(platform text)
RETURNS double precision
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT reserve_platform_request('dutchie');   -- 0: send it now; 0.4: sleep 0.4 s, then send it
-- One call a request, whatever the wait: the token is the caller's once this commits, so it
-- sleeps and sends without asking again (acquire_platform_request's callers poll instead). The
-- bucket goes below zero by the tokens reserved ahead: claims of the platform's tasks (roles
-- with claims_platform_token) and the next callers wait until the refill pays them back, so
-- the limit holds across all workers. Raises 55000 while the platform's circuit is open.
DECLARE
    v_row    platform_governance := _lock_platform(reserve_platform_request.platform);
    -- read once the row is ours (see acquire_platform_request)
    v_now    timestamptz := greatest(_platform_clock(), v_row.tokens_at);
    v_tokens double precision := _platform_tokens(v_row.tokens, v_row.tokens_at, v_row.requests_per_minute, v_now);
BEGIN
    IF v_row.open_until > v_now THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('platform %s is paused until %s: its circuit opened after %s consecutive failures',
                             v_row.platform, v_row.open_until, v_row.consecutive_failures),
            HINT = 'The first success after the cooldown closes the circuit.';
    END IF;

    UPDATE platform_governance g
    SET tokens = v_tokens - 1, tokens_at = v_now, requests_total = g.requests_total + 1
    WHERE g.platform = v_row.platform;
    RETURN greatest(0, (1 - v_tokens) * 60.0 / v_row.requests_per_minute);
END;
$$;

REVOKE ALL ON FUNCTION reserve_platform_request(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION reserve_platform_request(text) TO taskpool_worker;

COMMENT ON FUNCTION reserve_platform_request(text) IS $$Takes a platform's next token for one request, now or ahead: returns the seconds to wait before sending it (0: now).
Example:
  SELECT reserve_platform_request('dutchie');   -- 0: send it now; 0.4: sleep 0.4 s, then send it$$;

COMMIT;
