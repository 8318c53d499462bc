-- Deploy taskpool:task_workers to pg
-- requires: task_roles
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- task_workers
-- The worker registry: who serves which role, from where, and when each was last seen (idle workers too).
CREATE TABLE task_workers (
    worker_id     text        PRIMARY KEY,
    role          text        NOT NULL REFERENCES task_roles (role),
    host          text        NOT NULL,
    pid           integer     NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT taskpool_now(),
    last_seen_at  timestamptz NOT NULL DEFAULT taskpool_now(),

    CONSTRAINT task_workers_worker_id_length CHECK (length(worker_id) BETWEEN 1 AND 200),
    CONSTRAINT task_workers_host_length CHECK (length(host) BETWEEN 1 AND 255),
    CONSTRAINT task_workers_pid_positive CHECK (pid > 0)
);

COMMENT ON TABLE task_workers IS
    'Running workers, written by register_worker, heartbeat_worker and deregister_worker. '
    'A row whose last_seen_at is old belongs to a worker that died without deregistering.';

COMMIT;
