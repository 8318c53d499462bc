-- Deploy taskpool:acquire_platform_request to pg
-- requires: acquire_platform_request@v0.8.0
-- requires: _take_platform_token

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
BEGIN
    RETURN _take_platform_token(acquire_platform_request.platform, false);
END;
$$;

REVOKE ALL ON FUNCTION acquire_platform_request(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION acquire_platform_request(text) TO taskpool_worker;

COMMIT;
