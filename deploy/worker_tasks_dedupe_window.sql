-- Deploy taskpool:worker_tasks_dedupe_window to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- worker_tasks.dedupe_window: a dedupe key that holds beyond "while active". A task enqueued with
-- a key and a window holds the key for the period of that window it was created in, whatever
-- becomes of it (completed, failed and cancelled tasks included): periods are aligned to the
-- Unix epoch, as River's unique-by-period, so a window of an hour has the periods 10:00-11:00,
-- 11:00-12:00 (UTC), a day the UTC days. NULL: the key holds only while the task is active
-- (worker_tasks_one_active_per_dedupe_key_idx), as it always did.
--
-- Aligned periods, not a sliding "last hour": a unique index can then enforce them, so two
-- sessions enqueueing one key in one period get one task whatever their isolation level, with
-- no lock of our own and no lookup on the path of tasks without a window (the index is partial).
-- Only the enqueue functions write the column (no CHECK constraint: see worker_tasks_headers).
ALTER TABLE worker_tasks ADD COLUMN dedupe_window interval;

COMMENT ON COLUMN worker_tasks.dedupe_window IS
    'How long dedupe_key holds beyond the task''s active life: NULL, only while it is pending, claimed or '
    'running; else one task per key in each period of this length, aligned to the Unix epoch (an hour: '
    '10:00-11:00 UTC; a day: the UTC day), that the task''s created_at falls in, finished tasks included. '
    'From 1 second to 366 days; set by enqueue.';

-- _dedupe_period_start
-- The start of the period of a dedupe window that a time falls in: windows are aligned to the Unix epoch.
CREATE FUNCTION _dedupe_period_start(at timestamptz, dedupe_window interval)
RETURNS timestamptz
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
AS $$
    -- Example:
    --   SELECT _dedupe_period_start('2026-11-26 10:42:17+00', interval '1 hour');  -- 2026-11-26 10:00:00+00
    -- A day is 86400 seconds and a month 30 days, as extract(epoch) counts an interval.
    SELECT to_timestamp((floor(extract(epoch FROM at) / extract(epoch FROM dedupe_window))
                         * extract(epoch FROM dedupe_window))::double precision)
$$;

REVOKE ALL ON FUNCTION _dedupe_period_start(timestamptz, interval) FROM PUBLIC;

-- One task per key, window and period. The expression is computed only for rows with a window:
-- a partial index evaluates its predicate first, so tasks without one pay only that test.
CREATE UNIQUE INDEX worker_tasks_one_per_dedupe_period_idx
    ON worker_tasks (dedupe_key, dedupe_window, _dedupe_period_start(created_at, dedupe_window))
    WHERE dedupe_window IS NOT NULL AND dedupe_key IS NOT NULL;

COMMIT;
