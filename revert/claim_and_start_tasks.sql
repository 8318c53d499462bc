-- Revert taskpool:claim_and_start_tasks from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.5.0 body, a SQL function.
CREATE OR REPLACE FUNCTION claim_and_start_tasks(role text, worker_id text, max_tasks integer DEFAULT 1)
RETURNS SETOF worker_tasks
LANGUAGE sql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- Example:
    --   SELECT id, attempt, payload FROM claim_and_start_tasks('product_resync', 'w1');
    -- claim_tasks followed by start_task for each task, in one transaction: what a worker calls
    -- when it runs what it claims right away. The tasks come back running, started_at set;
    -- a worker holding several counts them all as running until it records their outcomes.
    SELECT * FROM _claim_tasks(claim_and_start_tasks.role, claim_and_start_tasks.worker_id,
                               claim_and_start_tasks.max_tasks, true);
$$;

REVOKE ALL ON FUNCTION claim_and_start_tasks(text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION claim_and_start_tasks(text, text, integer) TO taskpool_worker;

COMMIT;
