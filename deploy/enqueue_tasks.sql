-- Deploy taskpool:enqueue_tasks to pg
-- requires: _enqueue_specs

BEGIN;
SET client_min_messages = 'warning';

-- enqueue_tasks
-- Adds many tasks in one statement (a JSON array of specs); all or nothing.
CREATE FUNCTION enqueue_tasks(tasks jsonb)
RETURNS SETOF worker_tasks
LANGUAGE sql
AS $$
    -- Example:
    --   SELECT count(*) FROM enqueue_tasks('[
    --       {"role": "product_resync", "dispensary_id": 1, "priority": 5},
    --       {"role": "analytics_refresh", "dedupe_key": "analytics:2026-01-31"}]');
    -- Fields: role (required), payload, dispensary_id, platform, priority, scheduled_for,
    -- dedupe_key, max_retries, as in enqueue_task. Returns the created tasks and, for specs whose
    -- dedupe_key matched an active task, that task. An error names the spec: tasks[3]: ...
    SELECT * FROM _enqueue_specs(enqueue_tasks.tasks, 'tasks');
$$;

REVOKE ALL ON FUNCTION enqueue_tasks(jsonb) FROM PUBLIC;

COMMIT;
