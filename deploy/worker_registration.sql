-- Deploy taskpool:worker_registration to pg
-- requires: task_workers
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- worker_registration
-- What register_worker answers a starting worker: its registry row and the settings of its role
-- that the worker runs by. A worker login is granted taskpool_worker only, which cannot read
-- task_roles: the settings reach it here, through the function it calls at start-up anyway.
CREATE TYPE worker_registration AS (
    worker_id       text,
    role            text,
    host            text,
    pid             integer,
    started_at      timestamptz,
    last_seen_at    timestamptz,
    max_retries     integer,
    stale_threshold interval,
    run_timeout     interval,
    requires_store  boolean
);

COMMENT ON TYPE worker_registration IS
    'register_worker''s answer: the task_workers row and the role''s max_retries, stale_threshold, '
    'run_timeout and requires_store (task_roles, which taskpool_worker cannot read).';

COMMIT;
