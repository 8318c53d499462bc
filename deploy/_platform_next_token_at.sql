-- Deploy taskpool:_platform_next_token_at to pg
-- requires: platform_governance

BEGIN;
SET client_min_messages = 'warning';

-- _platform_next_token_at
-- When a platform's bucket next holds a whole token: tokens_at itself when it held one then.
CREATE FUNCTION _platform_next_token_at(tokens double precision, tokens_at timestamptz,
                                        requests_per_minute integer)
RETURNS timestamptz
LANGUAGE sql STABLE STRICT PARALLEL SAFE
AS $$
    SELECT CASE WHEN tokens >= 1 THEN tokens_at
                ELSE tokens_at + make_interval(secs => (1 - tokens) * 60.0 / requests_per_minute) END;
$$;

REVOKE ALL ON FUNCTION _platform_next_token_at(double precision, timestamptz, integer) FROM PUBLIC;

COMMIT;
