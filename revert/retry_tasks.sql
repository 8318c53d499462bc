-- Revert taskpool:retry_tasks from pg: back to the v0.8.0 body, which reads worker_tasks alone

BEGIN;
SET client_min_messages = 'warning';

-- retry_tasks
-- Puts up to max_tasks failed or cancelled tasks a filter selects back to pending now, as retry_task does; returns how many.
CREATE OR REPLACE FUNCTION retry_tasks(
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
--   SELECT retry_tasks(role := 'product_refresh', error_like := '%timeout%');   -- 1000 at most a call
--   SELECT retry_tasks(status := 'failed', created_after := now() - interval '1 hour', max_tasks := 5000);
-- One bounded batch a call, lowest ids first: call it again until it returns less than
-- max_tasks (`pyworker retry` does, a transaction a batch). The filters are tasks_matching's,
-- narrowed to failed and cancelled tasks. It leaves alone what retry_task would refuse: a task
-- at the last attempt its counter holds, one whose role needs the store it lost, and one whose
-- dedupe key another active task holds (of several with one key, the newest is retried).
-- Tasks another session holds locked are skipped this time.
DECLARE
    v_count integer;
BEGIN
    PERFORM _check_task_filter(retry_tasks.role, retry_tasks.status, retry_tasks.store, retry_tasks.platform,
                               retry_tasks.error_like, retry_tasks.created_before, retry_tasks.created_after);
    IF retry_tasks.status NOT IN ('failed', 'cancelled') THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('retry_tasks retries failed or cancelled tasks, not %s ones', retry_tasks.status);
    END IF;
    IF retry_tasks.max_tasks IS NULL OR retry_tasks.max_tasks NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_tasks must be between 1 and 100000, not %s', coalesce(retry_tasks.max_tasks::text, 'NULL'));
    END IF;

    WITH candidates AS (
        SELECT DISTINCT ON (coalesce(m.dedupe_key, m.id::text)) m.id
        FROM _tasks_filtered(retry_tasks.role, retry_tasks.status, retry_tasks.store, retry_tasks.platform,
                             retry_tasks.error_like, retry_tasks.created_before, retry_tasks.created_after) AS m
        WHERE m.status IN ('failed', 'cancelled')
          AND m.attempt < 2147483647
          AND (m.dispensary_id IS NOT NULL
               OR NOT EXISTS (SELECT FROM task_roles r WHERE r.role = m.role AND r.requires_store))
          AND (m.dedupe_key IS NULL
               OR NOT EXISTS (SELECT FROM worker_tasks a
                              WHERE a.dedupe_key = m.dedupe_key AND a.status IN ('pending', 'claimed', 'running')))
        ORDER BY coalesce(m.dedupe_key, m.id::text), m.id DESC
    ), batch AS (
        SELECT t.id
        FROM worker_tasks t
        WHERE t.id IN (SELECT c.id FROM candidates c)
        ORDER BY t.id
        LIMIT retry_tasks.max_tasks
        FOR UPDATE SKIP LOCKED
    ), retried AS (
        UPDATE worker_tasks t
        SET status = 'pending', retry_count = 0, scheduled_for = taskpool_now()
        FROM batch b
        WHERE t.id = b.id AND t.status IN ('failed', 'cancelled')
        RETURNING 1
    )
    SELECT count(*) INTO v_count FROM retried;
    RETURN v_count;
END;
$$;

REVOKE ALL ON FUNCTION retry_tasks(text, text, bigint, text, text, timestamptz, timestamptz, integer) FROM PUBLIC;
COMMENT ON FUNCTION retry_tasks(text, text, bigint, text, text, timestamptz, timestamptz, integer) IS $$Puts up to max_tasks (1000) failed or cancelled tasks a filter selects (tasks_matching's filters) back to pending now, as retry_task does, skipping what it would refuse; returns how many. Call again until it returns less than max_tasks.
Example:
  SELECT retry_tasks(role := 'product_refresh', error_like := '%timeout%');$$;

COMMIT;
