-- Deploy taskpool:generate_resync_tasks to pg
-- requires: generate_resync_tasks@v0.4.0
-- requires: generate_resync_plan

BEGIN;
SET client_min_messages = 'warning';

-- generate_resync_tasks
-- Plans a day of product_resync: one task per active store, stores split evenly in id order over `batches` slots.
CREATE OR REPLACE FUNCTION generate_resync_tasks(
    batches   integer,
    day       date,
    time_zone text    DEFAULT NULL,
    priority  integer DEFAULT 0)
RETURNS integer
LANGUAGE sql
AS $$
    -- Example:
    --   SELECT generate_resync_tasks(6, CURRENT_DATE);          -- 00:00, 04:00, ..., 20:00
    --   SELECT generate_resync_tasks(6, '2026-03-08', 'America/New_York');
    -- Returns how many tasks it created; generate_resync_plan, which does the planning (slots,
    -- daylight saving, the stores it skips), also says why it skipped the others. Idempotent: a
    -- store planned for that day once is never planned again, and a store that has a
    -- product_resync pending, claimed or running is skipped.
    SELECT p.created
    FROM generate_resync_plan(generate_resync_tasks.batches, generate_resync_tasks.day,
                              generate_resync_tasks.time_zone, generate_resync_tasks.priority) AS p;
$$;

REVOKE ALL ON FUNCTION generate_resync_tasks(integer, date, text, integer) FROM PUBLIC;

COMMIT;
