-- Deploy taskpool:cancel_tasks to pg
-- requires: tasks_matching
-- requires: cancel_task

BEGIN;
SET client_min_messages = 'warning';

-- cancel_tasks
-- Cancels up to max_tasks pending, claimed or running tasks a filter selects, as cancel_task does; returns how many.
CREATE FUNCTION cancel_tasks(
    role           text        DEFAULT NULL,
    status         text        DEFAULT NULL,
    store          bigint      DEFAULT NULL,
    platform       text        DEFAULT NULL,
    error_like     text        DEFAULT NULL,
    created_before timestamptz DEFAULT NULL,
    created_after  timestamptz DEFAULT NULL,
    max_tasks      integer     DEFAULT 1000)
RETURNS integer
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT cancel_tasks(role := 'product_refresh', store := 42);   -- 1000 at most a call
--   SELECT cancel_tasks(status := 'pending', created_before := now() - interval '1 day');
-- One bounded batch a call, lowest ids first: call it again until it returns less than
-- max_tasks (`pyworker cancel` does, a transaction a batch). A pending task is cancelled at
-- once; a claimed or running one gets cancel_requested_at and ends cancelled at its worker's
-- next heartbeat, and is counted once (a second call passes over it). Tasks another session
-- holds locked are skipped this time.
DECLARE
    v_count integer;
BEGIN
    PERFORM _check_task_filter(cancel_tasks.role, cancel_tasks.status, cancel_tasks.store, cancel_tasks.platform,
                               cancel_tasks.error_like, cancel_tasks.created_before, cancel_tasks.created_after);
    IF cancel_tasks.status NOT IN ('pending', 'claimed', 'running') THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('cancel_tasks cancels pending, claimed or running tasks, not %s ones', cancel_tasks.status);
    END IF;
    IF cancel_tasks.max_tasks IS NULL OR cancel_tasks.max_tasks NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_tasks must be between 1 and 100000, not %s', coalesce(cancel_tasks.max_tasks::text, 'NULL'));
    END IF;

    WITH batch AS (
        SELECT t.id
        FROM worker_tasks t
        WHERE t.id IN (SELECT m.id
                       FROM _tasks_filtered(cancel_tasks.role, cancel_tasks.status, cancel_tasks.store, cancel_tasks.platform,
                                            cancel_tasks.error_like, cancel_tasks.created_before, cancel_tasks.created_after) AS m
                       WHERE m.status = 'pending' OR (m.status IN ('claimed', 'running') AND m.cancel_requested_at IS NULL))
        ORDER BY t.id
        LIMIT cancel_tasks.max_tasks
        FOR UPDATE SKIP LOCKED
    ), cancelled AS (
        UPDATE worker_tasks t
        SET status = CASE WHEN t.status = 'pending' THEN 'cancelled' ELSE t.status END,
            cancel_requested_at = CASE WHEN t.status = 'pending' THEN t.cancel_requested_at ELSE taskpool_now() END
        FROM batch b
        WHERE t.id = b.id
          AND (t.status = 'pending' OR (t.status IN ('claimed', 'running') AND t.cancel_requested_at IS NULL))
        RETURNING 1
    )
    SELECT count(*) INTO v_count FROM cancelled;
    RETURN v_count;
END;
$$;

REVOKE ALL ON FUNCTION cancel_tasks(text, text, bigint, text, text, timestamptz, timestamptz, integer) FROM PUBLIC;
COMMENT ON FUNCTION cancel_tasks(text, text, bigint, text, text, timestamptz, timestamptz, integer) IS $$Cancels up to max_tasks (1000) pending, claimed or running tasks a filter selects (tasks_matching's filters), as cancel_task does: pending ones now, the others at their next heartbeat; returns how many. Call again until it returns less than max_tasks.
Example:
  SELECT cancel_tasks(role := 'product_refresh', store := 42);$$;

COMMIT;
