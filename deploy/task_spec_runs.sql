-- Deploy taskpool:task_spec_runs to pg
-- requires: worker_tasks_with_history
-- requires: task_spec_hash

BEGIN;
SET client_min_messages = 'warning';

-- task_spec_runs
-- The runs of one spec (role, store and payload, as task_spec_hash hashes them), newest first, in worker_tasks and in the history, whatever their dedupe key or window.
CREATE FUNCTION task_spec_runs(role text, dispensary_id integer DEFAULT NULL, payload jsonb DEFAULT '{}',
                               max_runs integer DEFAULT 100)
RETURNS SETOF worker_tasks_with_history
LANGUAGE plpgsql
STABLE
AS $$
-- Example:
--   SELECT id, status, completed_at FROM task_spec_runs('product_resync', 42, '{"reason": "manual"}');
-- A replay asks what became of the earlier runs of what it is about to enqueue. The history is
-- searched by worker_task_history_spec_hash_idx (the hash is stored when a task moves); the
-- hot table, which holds live work and the last minutes' finished tasks, by role and payload.
DECLARE
    v_hash text := task_spec_hash(task_spec_runs.role, task_spec_runs.dispensary_id, task_spec_runs.payload);
    v_payload jsonb := coalesce(nullif(task_spec_runs.payload, 'null'), '{}');
BEGIN
    IF task_spec_runs.max_runs IS NULL OR task_spec_runs.max_runs NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_runs must be from 1 to 10000, not %s', coalesce(task_spec_runs.max_runs::text, 'NULL'));
    END IF;
    RETURN QUERY
    SELECT r.*
    FROM (SELECT t.*, false
          FROM worker_tasks t
          WHERE t.role = task_spec_runs.role
            AND t.dispensary_id IS NOT DISTINCT FROM task_spec_runs.dispensary_id
            AND t.payload = v_payload
            AND task_spec_hash(t.role, t.dispensary_id, t.payload) = v_hash
          UNION ALL
          (SELECT h.id, h.role, h.dispensary_id, h.platform, h.status, h.priority, h.scheduled_for, h.payload,
                  h.dedupe_key, h.worker_id, h.attempt, h.claimed_at, h.started_at, h.last_heartbeat_at,
                  h.cancel_requested_at, h.completed_at, h.result, h.error_message, h.retry_count, h.max_retries,
                  h.created_at, h.updated_at, h.claim_token, h.backoff_base, h.backoff_cap, h.parent_id, h.headers,
                  h.waited, h.dedupe_window, true
           FROM worker_task_history h
           WHERE h.spec_hash = v_hash
           ORDER BY h.completed_at DESC
           LIMIT task_spec_runs.max_runs)) r
    ORDER BY r.created_at DESC, r.id DESC
    LIMIT task_spec_runs.max_runs;
END;
$$;

REVOKE ALL ON FUNCTION task_spec_runs(text, integer, jsonb, integer) FROM PUBLIC;

COMMENT ON FUNCTION task_spec_runs(text, integer, jsonb, integer) IS $$The runs of one spec (role, store and payload, as task_spec_hash hashes them), newest first, in worker_tasks and in the history, whatever their dedupe key or window.
Example:
  SELECT id, status, completed_at FROM task_spec_runs('product_resync', 42, '{"reason": "manual"}');$$;

COMMIT;
