-- Deploy taskpool:reserve_platform_request to pg
-- requires: _take_platform_token
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
BEGIN
    RETURN _take_platform_token(reserve_platform_request.platform, true);
END;
$$;

REVOKE ALL ON FUNCTION reserve_platform_request(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION reserve_platform_request(text) TO taskpool_worker;

COMMENT ON FUNCTION reserve_platform_request(text) IS $$Takes a platform's next token for one request, now or ahead: returns the seconds to wait before sending it (0: now).
Example:
  SELECT reserve_platform_request('dutchie');   -- 0: send it now; 0.4: sleep 0.4 s, then send it$$;

COMMIT;
