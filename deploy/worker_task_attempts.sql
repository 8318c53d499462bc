-- Deploy taskpool:worker_task_attempts to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- worker_task_attempts
-- History: one row per attempt that ended without completing its task (the completing attempt is the task row).
CREATE TABLE worker_task_attempts (
    task_id            bigint      NOT NULL REFERENCES worker_tasks (id) ON DELETE CASCADE,
    attempt            integer     NOT NULL,
    worker_id          text        NOT NULL,
    claimed_at         timestamptz NOT NULL,
    started_at         timestamptz,
    last_heartbeat_at  timestamptz,
    ended_at           timestamptz NOT NULL,
    outcome            text        NOT NULL,
    error_message      text,
    PRIMARY KEY (task_id, attempt),

    CONSTRAINT worker_task_attempts_outcome_known
        CHECK (outcome IN ('retried', 'released', 'failed', 'cancelled'))
);

COMMENT ON TABLE worker_task_attempts IS
    'Every attempt that ended without completing: who ran it, when, how it ended and its error. Never updated.';
COMMENT ON COLUMN worker_task_attempts.outcome IS
    'retried: failed (or went stale) and went back to pending, spending a retry; '
    'released: snoozed or handed back, no retry spent; failed: the task failed for good; '
    'cancelled: the attempt ended on a cancel request.';

COMMIT;
