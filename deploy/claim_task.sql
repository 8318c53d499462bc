-- Deploy taskpool:claim_task to pg
-- requires: claim_tasks

BEGIN;
SET client_min_messages = 'warning';

-- claim_task
-- Claims the next ready task of a role for a worker: the task row, or no row.
CREATE FUNCTION claim_task(role text, worker_id text)
RETURNS SETOF worker_tasks
LANGUAGE sql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- Example:
    --   SELECT claim_task('product_resync', 'w1');
    --   SELECT id, dispensary_id, attempt, payload FROM claim_task('product_resync', 'w1');
    -- Order: priority DESC, created_at ASC; only tasks whose scheduled_for has passed; never a
    -- task whose store already has a claimed or running task (any role).
    SELECT * FROM claim_tasks(claim_task.role, claim_task.worker_id, 1);
$$;

REVOKE ALL ON FUNCTION claim_task(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION claim_task(text, text) TO taskpool_worker;

COMMIT;
