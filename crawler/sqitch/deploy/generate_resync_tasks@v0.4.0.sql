-- Deploy taskpool:generate_resync_tasks to pg
-- requires: generate_resync_tasks@v0.3.0

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
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT generate_resync_tasks(6, CURRENT_DATE);          -- 00:00, 04:00, ..., 20:00
--   SELECT generate_resync_tasks(6, '2026-03-08', 'America/New_York');
-- Returns how many tasks it created. Slot k runs at local midnight + k * (24 h / batches), a
-- wall-clock time in time_zone (default: the session's TimeZone). On a spring-forward day a
-- slot inside the skipped hour runs at the first instant after it (02:00 becomes 03:00, the
-- same instant as a 03:00 slot); on a fall-back day a slot in the repeated hour runs at its
-- second occurrence, so the gap before it is one hour longer. Stores go to slots in id order,
-- the first slots taking one store more when the count does not divide. Idempotent: a store
-- planned for that day once (see resync_plan_entries) is never planned again, and a store
-- that has a product_resync pending, claimed or running is skipped. The day is one from
-- 0001-01-01 to 9999-12-31: an infinite day, or one whose slots fall past the timestamp
-- range, has no plan.
DECLARE
    v_time_zone text := coalesce(generate_resync_tasks.time_zone, current_setting('TimeZone'));
    v_count     integer;
BEGIN
    IF generate_resync_tasks.batches IS NULL OR generate_resync_tasks.day IS NULL
       OR generate_resync_tasks.priority IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'batches, day and priority are required';
    END IF;
    -- infinity and -infinity fall outside too
    IF generate_resync_tasks.day NOT BETWEEN date '0001-01-01' AND date '9999-12-31' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('day %s is out of range', generate_resync_tasks.day),
            HINT = 'Plan a day from 0001-01-01 to 9999-12-31.';
    END IF;
    IF generate_resync_tasks.batches NOT BETWEEN 1 AND 1440 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('batches %s is out of range', generate_resync_tasks.batches),
            HINT = 'From 1 (all at midnight) to 1440 (one slot a minute).';
    END IF;
    IF generate_resync_tasks.priority NOT BETWEEN -100 AND 100 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22003',
            MESSAGE = format('priority %s is out of range', generate_resync_tasks.priority),
            HINT = 'Priorities go from -100 to 100; higher runs first.';
    END IF;
    BEGIN
        PERFORM now() AT TIME ZONE v_time_zone;
    EXCEPTION WHEN invalid_parameter_value THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown time zone %L', v_time_zone),
            HINT = 'Use a name from pg_timezone_names, e.g. UTC or America/New_York.';
    END;

    -- Two plans of one day at once would both see the day unplanned: take turns per day.
    PERFORM pg_advisory_xact_lock(hashtext('taskpool.resync_plan'), generate_resync_tasks.day - date '2000-01-01');

    WITH
    -- active stores in id order, dealt into equal slots
    planned AS (
        SELECT d.id AS dispensary_id, d.platform,
               ntile(generate_resync_tasks.batches) OVER (ORDER BY d.id) - 1 AS slot
        FROM dispensaries d
        WHERE d.active
    ),
    -- those not planned for the day yet and with no resync under way, each at its slot's time
    fresh AS (
        SELECT p.dispensary_id, p.platform, p.slot,
               (generate_resync_tasks.day::timestamp
                + p.slot * (interval '24 hours' / generate_resync_tasks.batches)) AT TIME ZONE v_time_zone
                   AS scheduled_for
        FROM planned p
        WHERE NOT EXISTS (SELECT FROM resync_plan_entries e
                          WHERE e.day = generate_resync_tasks.day AND e.dispensary_id = p.dispensary_id)
          AND NOT EXISTS (SELECT FROM worker_tasks t
                          WHERE t.dispensary_id = p.dispensary_id AND t.role = 'product_resync'
                            AND t.status IN ('pending', 'claimed', 'running'))
    ),
    created AS (
        INSERT INTO worker_tasks (role, dispensary_id, platform, priority, scheduled_for, max_retries, payload)
        SELECT 'product_resync', f.dispensary_id, f.platform, generate_resync_tasks.priority, f.scheduled_for,
               r.max_retries, jsonb_build_object('plan_day', generate_resync_tasks.day, 'slot', f.slot)
        FROM fresh f
        CROSS JOIN task_roles r
        WHERE r.role = 'product_resync'
        ORDER BY f.dispensary_id
        RETURNING id, dispensary_id, scheduled_for
    ),
    entries AS (
        INSERT INTO resync_plan_entries (day, dispensary_id, task_id, slot, scheduled_for)
        SELECT generate_resync_tasks.day, c.dispensary_id, c.id, f.slot, c.scheduled_for
        FROM created c
        JOIN fresh f ON f.dispensary_id = c.dispensary_id
        RETURNING 1
    )
    SELECT count(*) INTO v_count FROM entries;
    RETURN v_count;
END;
$$;

REVOKE ALL ON FUNCTION generate_resync_tasks(integer, date, text, integer) FROM PUBLIC;

COMMIT;
