-- Deploy taskpool:task_workers_concurrency to pg
-- requires: task_workers

BEGIN;
SET client_min_messages = 'warning';

-- A worker process runs up to --concurrency tasks at once: its slots. Capacity is counted in
-- slots (what a per-task rate multiplies) and in processes (what a deployment scales).
ALTER TABLE task_workers
    ADD COLUMN concurrency integer NOT NULL DEFAULT 1,
    ADD CONSTRAINT task_workers_concurrency_range CHECK (concurrency BETWEEN 1 AND 100000);

COMMENT ON COLUMN task_workers.concurrency IS
    'The tasks the worker process runs at once (pyworker --concurrency): its slots, given to register_worker. '
    '1 for a worker registered without it.';

COMMIT;
