-- Deploy taskpool:_take_platform_token to pg
-- requires: _platform_tokens
-- requires: _platform_clock
-- requires: _lock_platform
-- requires: platform_governance_requests_total

BEGIN;
SET client_min_messages = 'warning';

-- _take_platform_token
-- Takes one token of a platform's bucket for a request: the seconds until it is due (0: now).
CREATE FUNCTION _take_platform_token(platform text, ahead boolean)
RETURNS double precision
LANGUAGE plpgsql
AS $$
-- ahead false (acquire_platform_request): a token not there now is not taken, and the answer is
-- how long until it is. ahead true (reserve_platform_request): the next token is taken whenever
-- it is due, the bucket going below zero, and the answer is how long until then.
-- Raises 55000 while the platform's circuit is open.
DECLARE
    v_row    platform_governance := _lock_platform(_take_platform_token.platform);
    -- read once the row is ours: the clock at the transaction's start may be older than the
    -- tokens_at the lock's last holder wrote, and refilling from it would count those seconds twice
    v_now    timestamptz := greatest(_platform_clock(), v_row.tokens_at);
    v_tokens double precision := _platform_tokens(v_row.tokens, v_row.tokens_at, v_row.requests_per_minute, v_now);
    v_wait   double precision := greatest(0, (1 - v_tokens) * 60.0 / v_row.requests_per_minute);
    v_taken  boolean := _take_platform_token.ahead OR v_tokens >= 1;
BEGIN
    IF v_row.open_until > v_now THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('platform %s is paused until %s: its circuit opened after %s consecutive failures',
                             v_row.platform, v_row.open_until, v_row.consecutive_failures),
            HINT = 'The first success after the cooldown closes the circuit.';
    END IF;

    -- requests_total counts the requests let through (a wait answered without a token is none)
    UPDATE platform_governance g
    SET tokens = v_tokens - v_taken::integer, tokens_at = v_now,
        requests_total = g.requests_total + v_taken::integer
    WHERE g.platform = v_row.platform;
    RETURN v_wait;
END;
$$;

REVOKE ALL ON FUNCTION _take_platform_token(text, boolean) FROM PUBLIC;

COMMIT;
