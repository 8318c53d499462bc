-- Deploy taskpool:_tasks_filtered to pg
-- requires: _tasks_filtered@v0.8.0
-- requires: worker_tasks_with_history

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
    -- worker_tasks and the history (worker_tasks_with_history): a status filter of live work
    -- reads no leaf of the history, which is partitioned by status under each day
    SELECT t.id, t.role, t.dispensary_id, t.platform, t.status, t.priority, t.scheduled_for, t.payload,
           t.dedupe_key, t.worker_id, t.attempt, t.claimed_at, t.started_at, t.last_heartbeat_at,
           t.cancel_requested_at, t.completed_at, t.result, t.error_message, t.retry_count, t.max_retries,
           t.created_at, t.updated_at, t.claim_token, t.backoff_base, t.backoff_cap, t.parent_id, t.headers,
           t.waited, t.dedupe_window
    FROM worker_tasks_with_history t
    WHERE (_tasks_filtered.role IS NULL OR t.role = _tasks_filtered.role)
      AND (_tasks_filtered.status IS NULL OR t.status = _tasks_filtered.status)
      AND (_tasks_filtered.store IS NULL OR t.dispensary_id = _tasks_filtered.store)
      AND (_tasks_filtered.platform IS NULL OR t.platform = _tasks_filtered.platform)
      AND (_tasks_filtered.error_like IS NULL OR t.error_message ILIKE _tasks_filtered.error_like)
      AND (_tasks_filtered.created_before IS NULL OR t.created_at < _tasks_filtered.created_before)
      AND (_tasks_filtered.created_after IS NULL OR t.created_at > _tasks_filtered.created_after)
$$;

COMMIT;
