-- Deploy taskpool:worker_tasks to pg
-- requires: taskpool_now
-- requires: task_roles
-- requires: dispensaries

BEGIN;
SET client_min_messages = 'warning';

-- worker_tasks
-- The pool: one row per task, every role in one table; workers claim rows by role.
CREATE TABLE worker_tasks (
    id                   bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    role                 text        NOT NULL REFERENCES task_roles (role),
    dispensary_id        integer     REFERENCES dispensaries (id),
    platform             text,
    status               text        NOT NULL DEFAULT 'pending',
    priority             integer     NOT NULL DEFAULT 0,
    scheduled_for        timestamptz NOT NULL DEFAULT taskpool_now(),
    payload              jsonb       NOT NULL DEFAULT '{}',
    dedupe_key           text,
    worker_id            text,
    attempt              integer     NOT NULL DEFAULT 0,
    claimed_at           timestamptz,
    started_at           timestamptz,
    last_heartbeat_at    timestamptz,
    cancel_requested_at  timestamptz,
    completed_at         timestamptz,
    result               jsonb,
    error_message        text,
    retry_count          integer     NOT NULL DEFAULT 0,
    max_retries          integer     NOT NULL DEFAULT 3,
    created_at           timestamptz NOT NULL DEFAULT taskpool_now(),
    updated_at           timestamptz NOT NULL DEFAULT taskpool_now(),

    CONSTRAINT worker_tasks_status_known
        CHECK (status IN ('pending', 'claimed', 'running', 'completed', 'failed', 'cancelled')),
    CONSTRAINT worker_tasks_priority_in_range
        CHECK (priority BETWEEN -100 AND 100),
    CONSTRAINT worker_tasks_payload_is_object
        CHECK (jsonb_typeof(payload) = 'object'),
    CONSTRAINT worker_tasks_retries_within_budget
        CHECK (max_retries >= 0 AND retry_count BETWEEN 0 AND max_retries),
    CONSTRAINT worker_tasks_attempt_not_negative
        CHECK (attempt >= 0),
    CONSTRAINT worker_tasks_dedupe_key_length
        CHECK (length(dedupe_key) BETWEEN 1 AND 255),
    -- A task back in the pool belongs to nobody: its last attempt lives in worker_task_attempts.
    CONSTRAINT worker_tasks_pending_is_unowned
        CHECK (status <> 'pending' OR (worker_id IS NULL AND claimed_at IS NULL AND started_at IS NULL
               AND last_heartbeat_at IS NULL AND cancel_requested_at IS NULL AND completed_at IS NULL)),
    CONSTRAINT worker_tasks_active_is_owned
        CHECK (status NOT IN ('claimed', 'running') OR (worker_id IS NOT NULL AND attempt > 0
               AND claimed_at IS NOT NULL AND last_heartbeat_at IS NOT NULL)),
    CONSTRAINT worker_tasks_running_is_started
        CHECK (status <> 'running' OR started_at IS NOT NULL),
    CONSTRAINT worker_tasks_completed_at_iff_finished
        CHECK ((completed_at IS NOT NULL) = (status IN ('completed', 'failed', 'cancelled')))
);

COMMENT ON TABLE worker_tasks IS
    'The task pool. Write it through the taskpool functions (enqueue_task, claim_task, complete_task, ...).';
COMMENT ON COLUMN worker_tasks.status IS
    'pending: ready once scheduled_for has passed; goes to claimed, or cancelled. '
    'claimed: a worker took it (claim_task); goes to running, completed, failed, pending, cancelled. '
    'running: the worker started it (start_task); goes to completed, failed, pending, cancelled. '
    'completed, failed, cancelled: finished; failed and cancelled go back to pending by retry_task. '
    'Allowed changes are the rows of task_status_transitions.';
COMMENT ON COLUMN worker_tasks.dispensary_id IS
    'The store a task acts on: at most one claimed or running task per store, across all roles.';
COMMENT ON COLUMN worker_tasks.priority IS
    'Higher first, from -100 to 100; equal priorities go oldest first.';
COMMENT ON COLUMN worker_tasks.scheduled_for IS
    'Not before: the task cannot be claimed earlier. Set by enqueue, retry backoff and snooze.';
COMMENT ON COLUMN worker_tasks.dedupe_key IS
    'Enqueue is idempotent per key while a task with it is pending, claimed or running.';
COMMENT ON COLUMN worker_tasks.attempt IS
    'Bumped by every claim. Worker-side calls name the attempt they own: this is the fence.';
COMMENT ON COLUMN worker_tasks.cancel_requested_at IS
    'Set by cancel_task on a claimed or running task; its heartbeat answers cancel_requested.';
COMMENT ON COLUMN worker_tasks.completed_at IS
    'When the task finished: completed, failed or cancelled.';
COMMENT ON COLUMN worker_tasks.error_message IS
    'The error of the latest attempt that failed; every attempt''s error stays in worker_task_attempts.';
COMMENT ON COLUMN worker_tasks.retry_count IS
    'Failed attempts that were retried (stale recoveries included); never more than max_retries.';

-- The claim walks this index in its ORDER BY and stops at the first ready row: its cost does
-- not depend on how many tasks are pending. scheduled_for is a trailing key so that future
-- tasks are filtered inside the index without visiting the heap.
CREATE INDEX worker_tasks_claim_order_idx
    ON worker_tasks (role, priority DESC, created_at, id, scheduled_for)
    WHERE status = 'pending';
COMMENT ON INDEX worker_tasks_claim_order_idx IS
    'Serves claim_tasks: ready tasks of a role in priority DESC, created_at order.';

CREATE UNIQUE INDEX worker_tasks_one_active_per_dispensary_idx
    ON worker_tasks (dispensary_id)
    WHERE status IN ('claimed', 'running');
COMMENT ON INDEX worker_tasks_one_active_per_dispensary_idx IS
    'Rule: at most one claimed or running task per store; also the claim''s busy-store probe.';

CREATE UNIQUE INDEX worker_tasks_one_active_per_dedupe_key_idx
    ON worker_tasks (dedupe_key)
    WHERE status IN ('pending', 'claimed', 'running') AND dedupe_key IS NOT NULL;
COMMENT ON INDEX worker_tasks_one_active_per_dedupe_key_idx IS
    'Rule: one active task per dedupe key; the ON CONFLICT arbiter of enqueue.';

-- worker_id, not last_heartbeat_at: heartbeats must stay HOT updates.
CREATE INDEX worker_tasks_active_by_worker_idx
    ON worker_tasks (worker_id)
    WHERE status IN ('claimed', 'running');
COMMENT ON INDEX worker_tasks_active_by_worker_idx IS
    'Serves recover_stale_tasks and "what is worker W doing": the few active tasks, by worker.';

CREATE INDEX worker_tasks_finished_idx
    ON worker_tasks (completed_at)
    WHERE status IN ('completed', 'failed', 'cancelled');
COMMENT ON INDEX worker_tasks_finished_idx IS
    'Serves prune_tasks: finished tasks, oldest first.';

COMMIT;
