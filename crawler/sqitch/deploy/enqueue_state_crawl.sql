-- Deploy taskpool_crawler:enqueue_state_crawl to pg
-- requires: crawler_roles
-- requires: dispensaries_crawler_columns
-- requires: taskpool:worker_tasks
-- requires: taskpool:task_roles

BEGIN;
SET client_min_messages = 'warning';

-- enqueue_state_crawl
-- Queues a crawl of every active store of a state: one task each, skipping the stores with one under way.
CREATE FUNCTION enqueue_state_crawl(
    role      text,
    state     text,
    dry_run   boolean DEFAULT false,
    OUT made         integer,
    OUT already_active integer)
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT * FROM enqueue_state_crawl('product_resync', 'AZ');
--   --  made | already_active
--   --    41 |              2
-- role is a crawl of one store's menu: product_resync or product_discovery. made: the tasks it
-- queued (due now, at the role's max_retries); already_active: the state's active stores
-- skipped because a task of theirs of that role is pending, claimed or running (the dedupe the
-- per_store schedules and generate_resync_plan use). The two add up to the state's active
-- stores: 0 and 0 for a state with none. dry_run counts without queueing. An unknown role, one
-- that is not a per-store crawl, or a state that is not two capital letters: 22023.
DECLARE
    c_crawl_roles constant text[] := ARRAY['product_discovery', 'product_resync'];
BEGIN
    IF enqueue_state_crawl.role IS NULL OR enqueue_state_crawl.state IS NULL OR enqueue_state_crawl.dry_run IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'enqueue_state_crawl needs a role, a state and dry_run';
    END IF;
    IF NOT EXISTS (SELECT FROM task_roles r WHERE r.role = enqueue_state_crawl.role) THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown role %L', left(enqueue_state_crawl.role, 60)),
            HINT = 'A state crawl is one of: ' || array_to_string(c_crawl_roles, ', ') || '.';
    END IF;
    IF enqueue_state_crawl.role <> ALL (c_crawl_roles) THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('role %s is not a crawl of a store''s menu', enqueue_state_crawl.role),
            HINT = 'A state crawl is one of: ' || array_to_string(c_crawl_roles, ', ') || '.';
    END IF;
    IF enqueue_state_crawl.state !~ '^[A-Z]{2}$' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('state %s is not a state code', left(quote_literal(enqueue_state_crawl.state), 60)),
            HINT = 'A state code is two capital letters, e.g. AZ.';
    END IF;

    -- Two calls at once would both see a store with nothing under way: take turns per role.
    PERFORM pg_advisory_xact_lock(hashtext('taskpool.enqueue_state_crawl'), hashtext(enqueue_state_crawl.role));

    WITH
    stores AS (
        SELECT d.id, d.platform,
               EXISTS (SELECT FROM worker_tasks t
                       WHERE t.dispensary_id = d.id AND t.role = enqueue_state_crawl.role
                         AND t.status IN ('pending', 'claimed', 'running')) AS under_way
        FROM dispensaries d
        WHERE d.active AND d.state_code = enqueue_state_crawl.state
    ),
    queued AS (
        INSERT INTO worker_tasks (role, dispensary_id, platform, max_retries)
        SELECT enqueue_state_crawl.role, s.id, s.platform, r.max_retries
        FROM stores s
        CROSS JOIN task_roles r
        WHERE r.role = enqueue_state_crawl.role AND NOT s.under_way AND NOT enqueue_state_crawl.dry_run
        ORDER BY s.id
        RETURNING 1
    )
    SELECT count(*) FILTER (WHERE NOT s.under_way), count(*) FILTER (WHERE s.under_way)
    INTO enqueue_state_crawl.made, enqueue_state_crawl.already_active
    FROM stores s;
END;
$$;

COMMENT ON FUNCTION enqueue_state_crawl(text, text, boolean) IS $$Queues a crawl of every active store of a state: one task each, skipping the stores with one under way.
Example:
  SELECT * FROM enqueue_state_crawl('product_resync', 'AZ');
  --  made | already_active
  --    41 |              2$$;

REVOKE ALL ON FUNCTION enqueue_state_crawl(text, text, boolean) FROM PUBLIC;

COMMIT;
