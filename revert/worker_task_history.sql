-- Revert taskpool:worker_task_history from pg
-- The history goes back to worker_tasks first, so that a revert loses no task.

BEGIN;
SET client_min_messages = 'warning';
-- as the rows were, not as new tasks: no trigger (a new task must be pending) and no NOTIFY
SET LOCAL session_replication_role = replica;

INSERT INTO worker_tasks OVERRIDING SYSTEM VALUE
SELECT h.id, h.role, h.dispensary_id, h.platform, h.status, h.priority, h.scheduled_for, h.payload,
       h.dedupe_key, h.worker_id, h.attempt, h.claimed_at, h.started_at, h.last_heartbeat_at,
       h.cancel_requested_at, h.completed_at, h.result, h.error_message, h.retry_count, h.max_retries,
       h.created_at, h.updated_at, h.claim_token, h.backoff_base, h.backoff_cap, h.parent_id, h.headers,
       h.waited, h.dedupe_window
FROM worker_task_history h;
INSERT INTO worker_task_attempts
SELECT a.task_id, a.attempt, a.worker_id, a.claimed_at, a.started_at, a.last_heartbeat_at, a.ended_at,
       a.outcome, a.error_message, a.error_details, a.claim_token, a.error_data
FROM worker_task_attempt_history a;

DROP TABLE task_history_counts;
DROP TABLE worker_task_attempt_history;
DROP TABLE worker_task_history;

COMMIT;
