-- Revert taskpool:worker_tasks_parent_id_unenforced from pg

BEGIN;
SET client_min_messages = 'warning';

UPDATE worker_tasks c SET parent_id = NULL
WHERE c.parent_id IS NOT NULL AND NOT EXISTS (SELECT FROM worker_tasks p WHERE p.id = c.parent_id);

ALTER TABLE worker_tasks
    ADD CONSTRAINT worker_tasks_parent_id_fkey FOREIGN KEY (parent_id) REFERENCES worker_tasks (id) ON DELETE SET NULL;

COMMENT ON COLUMN worker_tasks.parent_id IS
    'The task whose completion enqueued this one (follow_ups or task_role_chains); NULL otherwise, '
    'and once that task is pruned. task_chain(id) reads a chain back.';
COMMENT ON INDEX worker_tasks_parent_id_idx IS
    'The follow-ups of a task: task_chain''s walk down, and ON DELETE SET NULL when a parent is pruned.';

COMMIT;
