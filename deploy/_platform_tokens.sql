-- Deploy taskpool:_platform_tokens to pg
-- requires: platform_governance

BEGIN;
SET client_min_messages = 'warning';

-- _platform_tokens
-- The tokens a platform's bucket holds at a time: what it held at tokens_at, refilled since.
CREATE FUNCTION _platform_tokens(tokens double precision, tokens_at timestamptz,
                                 requests_per_minute integer, at timestamptz)
RETURNS double precision
LANGUAGE sql STABLE STRICT PARALLEL SAFE
AS $$
    -- Refills at requests_per_minute / 60 a second up to a burst of five seconds' worth (at
    -- least one). tokens may be negative: reserve_platform_request takes tokens ahead, and the
    -- debt is paid back by the refill before anyone else gets one. A time before tokens_at adds
    -- nothing; the refill counts at most an hour (tokens_at starts at -infinity).
    SELECT least(greatest(1.0, requests_per_minute / 12.0),
                 tokens + greatest(0, extract(epoch FROM at - greatest(tokens_at, at - interval '1 hour')))
                          * requests_per_minute / 60.0);
$$;

REVOKE ALL ON FUNCTION _platform_tokens(double precision, timestamptz, integer, timestamptz) FROM PUBLIC;

COMMIT;
