-- Deploy taskpool:acquire_platform_request to pg
-- requires: acquire_platform_request@v0.5.0
-- requires: platform_governance_requests_total

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
DECLARE
    v_now    timestamptz := taskpool_now();
    v_row    platform_governance := _lock_platform(acquire_platform_request.platform);
    v_rate   double precision := v_row.requests_per_minute / 60.0;
    v_burst  double precision := greatest(1.0, v_row.requests_per_minute / 12.0);
    v_tokens double precision;
    v_wait   double precision := 0;
BEGIN
    IF v_row.open_until > v_now THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('platform %s is paused until %s: its circuit opened after %s consecutive failures',
                             v_row.platform, v_row.open_until, v_row.consecutive_failures),
            HINT = 'The first success after the cooldown closes the circuit.';
    END IF;

    v_tokens := least(v_burst, v_row.tokens
                      + greatest(0, extract(epoch FROM v_now - greatest(v_row.tokens_at, v_now - interval '1 hour'))) * v_rate);
    IF v_tokens >= 1 THEN
        v_tokens := v_tokens - 1;
    ELSE
        v_wait := (1 - v_tokens) / v_rate;
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
