-- governance_clock: a request that waited for its platform's row lock refills the token bucket
-- from the clock it reads once the row is its own, never from its transaction's start. Three
-- requests in two dblink sessions: a caller whose transaction began a second ago takes its turn
-- after another one let a request through meanwhile. The body of acquire_platform_request at
-- v0.8.0 (run here as pg_temp.acquire_platform_request, each session's own) wrote back its
-- older tokens_at, and the next caller refilled that second again: two requests went through
-- for the one token that refilled. The live body lets one through. Platforms are committed by
-- the sessions and deleted at the end.
BEGIN;
SELECT plan(3);

CREATE EXTENSION IF NOT EXISTS dblink;
SELECT dblink_connect('gcl_early', tests.session_conninfo('gcl_early'));
SELECT dblink_connect('gcl_other', tests.session_conninfo('gcl_other'));

-- The v0.8.0 body, in each session (a temporary function is its session's own).
SELECT dblink_exec(session, format($fn$CREATE FUNCTION pg_temp.acquire_platform_request(platform text)
RETURNS double precision LANGUAGE plpgsql AS %L$fn$, $body$
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
$body$))
FROM unnest(ARRAY['gcl_early', 'gcl_other']) AS session;

-- How many requests the three calls let through on a platform whose bucket is empty: an early
-- transaction starts, a second passes, the other session takes the token that refilled, then
-- the early one asks (it waited for nothing here, but it reads a clock a second old), then the
-- other asks again at once.
CREATE FUNCTION pg_temp.gcl_requests_let_through(platform text, acquire text)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_call text := format('SELECT %s(%L)', acquire, platform);
BEGIN
    PERFORM dblink_exec('gcl_other', format(
        'INSERT INTO platform_governance (platform, requests_per_minute, tokens, tokens_at) VALUES (%L, 60, 0, clock_timestamp())',
        platform));
    PERFORM dblink_exec('gcl_early', 'BEGIN');
    PERFORM * FROM dblink('gcl_early', 'SELECT now()') AS r(started timestamptz);
    PERFORM pg_sleep(1.05);
    PERFORM * FROM dblink('gcl_other', v_call) AS r(wait double precision);
    PERFORM * FROM dblink('gcl_early', v_call) AS r(wait double precision);
    PERFORM dblink_exec('gcl_early', 'COMMIT');
    PERFORM * FROM dblink('gcl_other', v_call) AS r(wait double precision);
    RETURN (SELECT requests FROM dblink('gcl_other', format(
        'SELECT requests_total FROM platform_governance WHERE platform = %L', platform)) AS r(requests bigint));
END;
$$;

SELECT is(pg_temp.gcl_requests_let_through('gcl_v080', 'pg_temp.acquire_platform_request'), 2::bigint,
    'Should show the v0.8.0 body letting two requests through for the one token a second refilled');
SELECT is(pg_temp.gcl_requests_let_through('gcl_live', 'acquire_platform_request'), 1::bigint,
    'Should let one request through for the one token a second refilled');
SELECT ok((SELECT tokens_at FROM dblink('gcl_other',
               $$SELECT tokens_at FROM platform_governance WHERE platform = 'gcl_live'$$) AS r(tokens_at timestamptz))
          > now(),
    'Should never move the bucket''s time back to a transaction''s start');
SELECT dblink_exec('gcl_other', $$DELETE FROM platform_governance WHERE platform LIKE 'gcl\_%'$$);
SELECT dblink_disconnect('gcl_early');
SELECT dblink_disconnect('gcl_other');

SELECT * FROM finish();
ROLLBACK;
