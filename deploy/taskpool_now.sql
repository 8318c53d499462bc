-- Deploy taskpool:taskpool_now to pg
-- requires: taskpool_now@v0.3.0

BEGIN;
SET client_min_messages = 'warning';

-- taskpool_now
-- The database clock every taskpool function reads: transaction time, plus the offset an operator set.
-- No session setting moves it. Up to v0.3.0 it added the custom setting taskpool.clock_offset,
-- which any session may SET: a worker could claim tomorrow's tasks, stamp heartbeats a century
-- ahead or backdate completions through the SECURITY DEFINER functions. The offset is now a
-- constant in this body, which only the function's owner can replace, through
-- set_taskpool_clock_offset(); kept a one-line SQL function, it is inlined where it is called,
-- as cheap as now() itself.
CREATE OR REPLACE FUNCTION taskpool_now()
RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT now();
$$;

COMMENT ON FUNCTION taskpool_now() IS
    'Database time for taskpool: now() plus the offset set by set_taskpool_clock_offset() (none by default).';

COMMIT;
