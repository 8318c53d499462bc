-- Deploy taskpool:worker_tasks_parent_id_unenforced to pg
-- requires: worker_tasks_parent_id

BEGIN;
SET client_min_messages = 'warning';

-- A parent moves to worker_task_history (move_tasks_to_history) while its follow-ups still run:
-- the foreign key would have cleared their parent_id then (ON DELETE SET NULL), and task_chain
-- would lose the link. parent_id now names a task in worker_tasks or in the history;
-- delete_task clears it on the follow-ups of the task it deletes, and a pruned parent leaves it
-- pointing at nothing, which task_chain skips.
ALTER TABLE worker_tasks DROP CONSTRAINT worker_tasks_parent_id_fkey;

COMMENT ON COLUMN worker_tasks.parent_id IS
    'The task whose completion enqueued this one (follow_ups or task_role_chains), in worker_tasks or '
    'worker_task_history; NULL otherwise, and once delete_task deletes that task. task_chain(id) reads a chain back.';
COMMENT ON INDEX worker_tasks_parent_id_idx IS
    'The follow-ups of a task: task_chain''s walk down, and delete_task clearing their parent_id.';

COMMIT;
