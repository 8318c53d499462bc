-- Deploy taskpool:worker_tasks_own_backoff to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- worker_tasks.backoff_base and backoff_cap: a task's own retry backoff, as it may carry its own
-- max_retries; NULL takes the role's (task_roles.backoff_base, backoff_cap). The multiplier and
-- the jitter stay the role's.
--
-- Enqueue checks them (more than 0, at most a year, cap not below base). No CHECK constraint:
-- PostgreSQL parses a table's CHECK constraints at every INSERT and UPDATE statement (see
-- worker_tasks_headers), and only the enqueue functions write them.
ALTER TABLE worker_tasks
    ADD COLUMN backoff_base interval,
    ADD COLUMN backoff_cap  interval;

COMMENT ON COLUMN worker_tasks.backoff_base IS
    'This task''s delay before its first retry; NULL: its role''s backoff_base. Set by enqueue.';
COMMENT ON COLUMN worker_tasks.backoff_cap IS
    'This task''s longest delay between retries; NULL: its role''s backoff_cap. Set by enqueue.';

COMMIT;
