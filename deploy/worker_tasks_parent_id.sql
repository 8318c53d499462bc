-- Deploy taskpool:worker_tasks_parent_id to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- worker_tasks.parent_id: the task whose completion enqueued this one (its follow_ups, or a
-- chain of task_role_chains), so that a chain can be read back (task_chain). NULL for a task
-- enqueued by anyone else, and once the parent is pruned.
--
-- A nullable column without a default: no rewrite of the table. The foreign key costs an insert
-- with no parent nothing beyond a queued check that returns at its NULL, and an update that
-- leaves parent_id and id alone is not checked at all.
ALTER TABLE worker_tasks
    ADD COLUMN parent_id bigint
        CONSTRAINT worker_tasks_parent_id_fkey REFERENCES worker_tasks (id) ON DELETE SET NULL;

COMMENT ON COLUMN worker_tasks.parent_id IS
    'The task whose completion enqueued this one (follow_ups or task_role_chains); NULL otherwise, '
    'and once that task is pruned. task_chain(id) reads a chain back.';

-- Partial: most tasks have no parent. Serves task_chain's walk down a chain, and the foreign
-- key's SET NULL when prune_tasks deletes a parent.
CREATE INDEX worker_tasks_parent_id_idx ON worker_tasks (parent_id) WHERE parent_id IS NOT NULL;
COMMENT ON INDEX worker_tasks_parent_id_idx IS
    'The follow-ups of a task: task_chain''s walk down, and ON DELETE SET NULL when a parent is pruned.';

COMMIT;
