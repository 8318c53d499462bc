-- Deploy taskpool:claim_tasks to pg
-- requires: claim_tasks@v0.2.0
-- requires: _claim_tasks

BEGIN;
SET client_min_messages = 'warning';

-- claim_tasks
-- Claims up to max_tasks ready tasks of a role for a worker, at most one per store; returns them.
CREATE OR REPLACE FUNCTION claim_tasks(role text, worker_id text, max_tasks integer)
RETURNS SETOF worker_tasks
LANGUAGE sql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- Example:
    --   SELECT id, dispensary_id, attempt FROM claim_tasks('product_resync', 'w1', 10);
    -- Each returned task is claimed (attempt + 1); pass its id and attempt to start_task,
    -- heartbeat_task, complete_task or fail_task. No ready task: no row. Tasks of a platform
    -- whose circuit is open (platform_governance.open_until in the future) are not handed out.
    -- A batch may hold fewer than max_tasks while ready tasks remain: one task per store.
    SELECT * FROM _claim_tasks(claim_tasks.role, claim_tasks.worker_id, claim_tasks.max_tasks, false);
$$;

COMMIT;
