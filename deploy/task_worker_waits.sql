-- Deploy taskpool:task_worker_waits to pg
-- requires: task_workers

BEGIN;
SET client_min_messages = 'warning';

-- task_worker_waits
-- One row per registered worker that found no ready task and sleeps until a notification wakes
-- it. Enqueues and requeues wake as many of them as tasks became ready, and only them: a busy
-- pool sends no notifications at all (NOTIFY makes committing transactions wait on each other).
-- Its own table, not a column of task_workers, so that a worker's heartbeat never holds the row
-- an enqueuer wants to take.
CREATE TABLE task_worker_waits (
    worker_id      text        PRIMARY KEY REFERENCES task_workers (worker_id) ON DELETE CASCADE,
    role           text        NOT NULL REFERENCES task_roles (role),
    waiting_since  timestamptz NOT NULL DEFAULT taskpool_now()
);

CREATE INDEX task_worker_waits_role_idx ON task_worker_waits (role);

COMMENT ON TABLE task_worker_waits IS
    'Workers asleep until woken: mark_worker_waiting adds a row, a wake-up (or the worker''s next successful claim) removes it.';

COMMIT;
