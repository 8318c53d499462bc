-- Revert taskpool:taskpool_now from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.3.0 body, which added the session setting taskpool.clock_offset.
-- taskpool_now
-- The database clock every taskpool function reads; tests shift it with a setting.
CREATE OR REPLACE FUNCTION taskpool_now()
RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    -- Transaction time, not wall time: every row a transaction touches gets one consistent
    -- instant. `taskpool.clock_offset` (an interval; `ALTER SYSTEM SET` + `pg_reload_conf()` for
    -- every session, `SET` for one) lets fault tests jump the clock without touching the host.
    SELECT now() + coalesce(nullif(current_setting('taskpool.clock_offset', true), ''), '0')::interval;
$$;

COMMENT ON FUNCTION taskpool_now() IS
    'Database time for taskpool: now() plus the test-only taskpool.clock_offset setting.';

COMMIT;
