-- Deploy taskpool:_tasks_filtered to pg
-- requires: tasks_matching

-- _tasks_filtered's home: its live body, unchanged from tasks_matching.
-- Change _tasks_filtered here, with `sqitch rework _tasks_filtered`.

BEGIN;
SET client_min_messages = 'warning';

-- _tasks_filtered
-- The tasks a filter selects, unchecked; plain SQL, so that the planner inlines it and a LIMIT reaches the scan.
CREATE OR REPLACE FUNCTION _tasks_filtered(
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

COMMIT;
