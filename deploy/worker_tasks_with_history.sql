-- Deploy taskpool:worker_tasks_with_history to pg
-- requires: worker_task_history

BEGIN;
SET client_min_messages = 'warning';

-- worker_tasks_with_history
-- Every task: worker_tasks (live work and the recently finished) and worker_task_history (finished longer ago), with in_history saying which.
CREATE VIEW worker_tasks_with_history AS
SELECT t.id, t.role, t.dispensary_id, t.platform, t.status, t.priority, t.scheduled_for, t.payload,
       t.dedupe_key, t.worker_id, t.attempt, t.claimed_at, t.started_at, t.last_heartbeat_at,
       t.cancel_requested_at, t.completed_at, t.result, t.error_message, t.retry_count, t.max_retries,
       t.created_at, t.updated_at, t.claim_token, t.backoff_base, t.backoff_cap, t.parent_id, t.headers,
       t.waited, t.dedupe_window, false AS in_history
FROM worker_tasks t
UNION ALL
SELECT h.id, h.role, h.dispensary_id, h.platform, h.status, h.priority, h.scheduled_for, h.payload,
       h.dedupe_key, h.worker_id, h.attempt, h.claimed_at, h.started_at, h.last_heartbeat_at,
       h.cancel_requested_at, h.completed_at, h.result, h.error_message, h.retry_count, h.max_retries,
       h.created_at, h.updated_at, h.claim_token, h.backoff_base, h.backoff_cap, h.parent_id, h.headers,
       h.waited, h.dedupe_window, true
FROM worker_task_history h;

COMMENT ON VIEW worker_tasks_with_history IS
    'Every task, wherever it is: worker_tasks (live work and tasks finished in the last history_after) '
    'and worker_task_history (in_history). A task is in exactly one of the two. Look tasks up here by id; '
    'count by status with v_task_counts, which does not read the rows.';

COMMIT;
