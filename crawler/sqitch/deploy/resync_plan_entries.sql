-- Deploy taskpool:resync_plan_entries to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- resync_plan_entries
-- Which store got its product_resync for which day: what makes generate_resync_tasks idempotent.
CREATE TABLE resync_plan_entries (
    day            date        NOT NULL,
    dispensary_id  integer     NOT NULL REFERENCES dispensaries (id) ON DELETE CASCADE,
    task_id        bigint      REFERENCES worker_tasks (id) ON DELETE SET NULL,
    slot           integer     NOT NULL,
    scheduled_for  timestamptz NOT NULL,
    PRIMARY KEY (day, dispensary_id)
);

COMMENT ON TABLE resync_plan_entries IS
    'One row per store per planned day. It outlives its task (task_id goes NULL when the task is '
    'pruned), so planning a day twice never queues a store twice, however long ago the task ran.';

-- Deleting or pruning a task finds its entry by this index.
CREATE INDEX resync_plan_entries_task_idx ON resync_plan_entries (task_id);
COMMENT ON INDEX resync_plan_entries_task_idx IS 'Serves ON DELETE SET NULL from worker_tasks.';

COMMIT;
