-- Deploy taskpool:_dedupe_period_start to pg
-- requires: worker_tasks_dedupe_window

-- _dedupe_period_start's home: its live body, unchanged from worker_tasks_dedupe_window.
-- Change _dedupe_period_start here, with `sqitch rework _dedupe_period_start`.

BEGIN;
SET client_min_messages = 'warning';

-- _dedupe_period_start
-- The start of the period of a dedupe window that a time falls in: windows are aligned to the Unix epoch.
CREATE OR REPLACE FUNCTION _dedupe_period_start(at timestamptz, dedupe_window interval)
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

COMMIT;
