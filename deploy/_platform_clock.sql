-- Deploy taskpool:_platform_clock to pg
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- _platform_clock
-- taskpool's clock (taskpool_now(), with its offset) read at the call, not at the transaction's start.
CREATE FUNCTION _platform_clock()
RETURNS timestamptz
LANGUAGE sql VOLATILE
AS $$
    -- taskpool_now() is now() plus the offset set_taskpool_clock_offset gives it. A token bucket
    -- read after waiting for its platform's row lock must refill to the moment it holds the lock:
    -- the transaction's start (now()) may be older than the tokens_at the lock's last holder wrote.
    SELECT clock_timestamp() + (taskpool_now() - now());
$$;

REVOKE ALL ON FUNCTION _platform_clock() FROM PUBLIC;

COMMIT;
