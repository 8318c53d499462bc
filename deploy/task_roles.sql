-- Deploy taskpool:task_roles to pg
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- task_roles
-- The kinds of work, as data: a role's row carries the defaults its tasks start with.
CREATE TABLE task_roles (
    role               text        PRIMARY KEY,
    description        text        NOT NULL DEFAULT '',
    max_retries        integer     NOT NULL DEFAULT 3,
    stale_threshold    interval    NOT NULL DEFAULT '10 minutes',
    backoff_base       interval    NOT NULL DEFAULT '30 seconds',
    backoff_cap        interval    NOT NULL DEFAULT '1 hour',
    max_payload_bytes  integer     NOT NULL DEFAULT 65536,
    requires_store     boolean     NOT NULL DEFAULT false,
    run_timeout        interval    NOT NULL DEFAULT '1 hour',
    created_at         timestamptz NOT NULL DEFAULT taskpool_now(),

    CONSTRAINT task_roles_role_is_identifier
        CHECK (role ~ '^[a-z][a-z0-9_]{0,62}$'),
    CONSTRAINT task_roles_max_retries_not_negative
        CHECK (max_retries >= 0),
    CONSTRAINT task_roles_stale_threshold_positive
        CHECK (stale_threshold > interval '0'),
    CONSTRAINT task_roles_backoff_positive_and_capped
        CHECK (backoff_base > interval '0' AND backoff_cap >= backoff_base),
    CONSTRAINT task_roles_max_payload_bytes_positive
        CHECK (max_payload_bytes > 0),
    CONSTRAINT task_roles_run_timeout_positive
        CHECK (run_timeout > interval '0')
);

COMMENT ON TABLE task_roles IS
    'One row per role a worker can serve; its columns are the defaults and limits of that role''s tasks.';
COMMENT ON COLUMN task_roles.max_retries IS
    'Retries a new task gets: a task runs at most max_retries + 1 times.';
COMMENT ON COLUMN task_roles.stale_threshold IS
    'A claimed or running task with no heartbeat for this long is recovered by the tick.';
COMMENT ON COLUMN task_roles.backoff_base IS
    'Delay before the first retry; each further retry doubles it, up to backoff_cap.';
COMMENT ON COLUMN task_roles.max_payload_bytes IS
    'Largest payload (bytes of its JSON text) enqueue accepts for this role.';
COMMENT ON COLUMN task_roles.run_timeout IS
    'Longest a worker lets one attempt run: then it aborts the handler (killing a subprocess) and fails the attempt.';
COMMENT ON COLUMN task_roles.requires_store IS
    'Tasks of this role name a dispensary_id: they act on one store and obey per-store exclusion.';

COMMIT;
