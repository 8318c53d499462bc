-- Deploy taskpool:enqueue_specs to pg
-- requires: task_spec
-- requires: _enqueue

BEGIN;
SET client_min_messages = 'warning';

-- enqueue_specs
-- Adds many tasks in one statement from typed specs (task_spec[]); all or nothing.
CREATE FUNCTION enqueue_specs(specs task_spec[])
RETURNS SETOF worker_tasks
LANGUAGE sql
AS $$
    -- Example:
    --   SELECT id FROM enqueue_specs(ARRAY[
    --       ROW('product_resync', NULL, 1, 5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::task_spec,
    --       ROW('analytics_refresh', NULL, NULL, NULL, NULL, 'analytics:2026-01-31', NULL, NULL, NULL,
    --           NULL, NULL, NULL, NULL)::task_spec]);
    -- The typed form of enqueue_tasks, for clients that bind arrays (pyworker's Client, River-
    -- and graphile-style batches); the same checks and errors (tasks[3]: ...). Returns the
    -- created tasks and, for specs whose dedupe key matched a task, that task.
    SELECT * FROM unnest(_enqueue(enqueue_specs.specs, 'tasks', NULL));
$$;

REVOKE ALL ON FUNCTION enqueue_specs(task_spec[]) FROM PUBLIC;

COMMENT ON FUNCTION enqueue_specs(task_spec[]) IS $$Adds many tasks in one statement from typed specs (task_spec[]); all or nothing.
Example:
  SELECT id FROM enqueue_specs(ARRAY[
      ROW('product_resync', NULL, 1, 5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::task_spec]);$$;

COMMIT;
