-- Deploy taskpool:set_taskpool_clock_offset to pg
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- set_taskpool_clock_offset
-- Moves taskpool's clock: taskpool_now() becomes now() + clock_offset, for every session; returns the new taskpool_now().
CREATE FUNCTION set_taskpool_clock_offset(clock_offset interval)
RETURNS timestamptz
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
-- This style signs every field ('-1 days +02:00:00'): the text reads back the same under every
-- IntervalStyle, sql_standard's leading sign included.
SET IntervalStyle = 'postgres'
AS $$
-- Examples:
--   SELECT set_taskpool_clock_offset(interval '20 minutes');   -- jump ahead, e.g. past the stale threshold
--   SELECT set_taskpool_clock_offset(interval '0');            -- back to the database's own clock
-- For operators and tests only: the owner may call it, and whoever the owner grants it to; never
-- taskpool_worker. It rewrites the body of taskpool_now() with the offset as a constant, which
-- only the function's owner can do, so reading the clock stays as cheap as now(). Committed, it moves the clock of every session from
-- its next transaction; inside a transaction that rolls back (a pgTAP test), it moves nothing
-- outside that transaction.
BEGIN
    IF set_taskpool_clock_offset.clock_offset IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22004',
            MESSAGE = 'clock_offset is required',
            HINT = 'interval ''0'' puts taskpool back on the database''s own clock.';
    END IF;
    -- Tests move the clock by minutes to days; past a century it is a typo, and near the end of
    -- the timestamp range every taskpool call would fail with 'timestamp out of range'.
    IF set_taskpool_clock_offset.clock_offset NOT BETWEEN interval '-100 years' AND interval '100 years' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('clock_offset must be between -100 years and 100 years, not %s',
                             set_taskpool_clock_offset.clock_offset);
    END IF;

    -- One rewrite at a time: two concurrent ones would collide on the function's catalog row.
    PERFORM pg_advisory_xact_lock(hashtext('taskpool.clock'));
    EXECUTE format(
        $sql$CREATE OR REPLACE FUNCTION taskpool_now() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS %L$sql$,
        CASE WHEN set_taskpool_clock_offset.clock_offset = interval '0' THEN 'SELECT now();'
             ELSE format('SELECT now() + interval %L;', set_taskpool_clock_offset.clock_offset) END);
    RETURN now() + set_taskpool_clock_offset.clock_offset;
END;
$$;

REVOKE ALL ON FUNCTION set_taskpool_clock_offset(interval) FROM PUBLIC;

COMMIT;
