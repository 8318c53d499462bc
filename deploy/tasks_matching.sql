-- Deploy taskpool:tasks_matching to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- _check_task_filter
-- Raises 22023 for a filter that selects every task, or names an unknown status.
CREATE FUNCTION _check_task_filter(
    role           text        DEFAULT NULL,
    status         text        DEFAULT NULL,
    store          bigint      DEFAULT NULL,
    platform       text        DEFAULT NULL,
    error_like     text        DEFAULT NULL,
    created_before timestamptz DEFAULT NULL,
    created_after  timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
    IF num_nonnulls(_check_task_filter.role, _check_task_filter.status, _check_task_filter.store,
                    _check_task_filter.platform, _check_task_filter.error_like, _check_task_filter.created_before,
                    _check_task_filter.created_after) = 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'give at least one filter: role, status, store, platform, error_like, created_before or created_after',
            HINT = 'To take every task of a status, give that status.';
    END IF;
    IF _check_task_filter.status NOT IN ('pending', 'claimed', 'running', 'completed', 'failed', 'cancelled') THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('status %L is not a task status', _check_task_filter.status),
            HINT = 'pending, claimed, running, completed, failed or cancelled.';
    END IF;
END;
$$;

-- _tasks_filtered
-- The tasks a filter selects, unchecked; plain SQL, so that the planner inlines it and a LIMIT reaches the scan.
CREATE FUNCTION _tasks_filtered(
    role           text        DEFAULT NULL,
    status         text        DEFAULT NULL,
    store          bigint      DEFAULT NULL,
    platform       text        DEFAULT NULL,
    error_like     text        DEFAULT NULL,
    created_before timestamptz DEFAULT NULL,
    created_after  timestamptz DEFAULT NULL)
RETURNS SETOF worker_tasks
LANGUAGE sql
STABLE
AS $$
    SELECT t.*
    FROM worker_tasks t
    WHERE (_tasks_filtered.role IS NULL OR t.role = _tasks_filtered.role)
      AND (_tasks_filtered.status IS NULL OR t.status = _tasks_filtered.status)
      AND (_tasks_filtered.store IS NULL OR t.dispensary_id = _tasks_filtered.store)
      AND (_tasks_filtered.platform IS NULL OR t.platform = _tasks_filtered.platform)
      AND (_tasks_filtered.error_like IS NULL OR t.error_message ILIKE _tasks_filtered.error_like)
      AND (_tasks_filtered.created_before IS NULL OR t.created_at < _tasks_filtered.created_before)
      AND (_tasks_filtered.created_after IS NULL OR t.created_at > _tasks_filtered.created_after)
$$;

-- tasks_matching
-- The tasks a filter selects, by id: what retry_tasks and cancel_tasks act on, and a dry run's sample.
CREATE FUNCTION tasks_matching(
    role           text        DEFAULT NULL,
    status         text        DEFAULT NULL,
    store          bigint      DEFAULT NULL,
    platform       text        DEFAULT NULL,
    error_like     text        DEFAULT NULL,
    created_before timestamptz DEFAULT NULL,
    created_after  timestamptz DEFAULT NULL)
RETURNS SETOF worker_tasks
LANGUAGE plpgsql
STABLE
AS $$
-- Example:
--   SELECT count(*) FROM tasks_matching(role := 'product_refresh', status := 'failed', error_like := '%timeout%');
--   SELECT id, status FROM tasks_matching(store := 42, created_after := now() - interval '1 day') LIMIT 10;
-- Each filter given narrows the set; error_like is an ILIKE pattern on error_message. At least
-- one filter is required, so that a missing argument never means every task.
BEGIN
    PERFORM _check_task_filter(tasks_matching.role, tasks_matching.status, tasks_matching.store, tasks_matching.platform,
                               tasks_matching.error_like, tasks_matching.created_before, tasks_matching.created_after);
    RETURN QUERY
    SELECT * FROM _tasks_filtered(tasks_matching.role, tasks_matching.status, tasks_matching.store, tasks_matching.platform,
                                  tasks_matching.error_like, tasks_matching.created_before, tasks_matching.created_after) AS t
    ORDER BY t.id;
END;
$$;

REVOKE ALL ON FUNCTION _check_task_filter(text, text, bigint, text, text, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION _tasks_filtered(text, text, bigint, text, text, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION tasks_matching(text, text, bigint, text, text, timestamptz, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION tasks_matching(text, text, bigint, text, text, timestamptz, timestamptz) IS $$The tasks a filter selects (role, status, store, platform, error_like: an ILIKE pattern on error_message, created_before, created_after), by id; at least one filter is required.
Example:
  SELECT count(*) FROM tasks_matching(role := 'product_refresh', status := 'failed', error_like := '%timeout%');$$;

COMMIT;
