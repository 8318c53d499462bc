-- Deploy taskpool:claim_and_start_tasks to pg
-- requires: claim_and_start_tasks@v0.5.0
-- requires: _claim_tasks

BEGIN;
SET client_min_messages = 'warning';

-- claim_and_start_tasks
-- Claims and starts up to max_tasks ready tasks of a role in one transaction; returns them.
-- PL/pgSQL rather than SQL: a SQL function that cannot be inlined (this one is SECURITY
-- DEFINER) has its body parsed and planned on every call in PostgreSQL 15; PL/pgSQL keeps the
-- plan for the session. It is a worker's hot path, once per task or batch.
CREATE OR REPLACE FUNCTION claim_and_start_tasks(role text, worker_id text, max_tasks integer DEFAULT 1)
RETURNS SETOF worker_tasks
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT id, attempt, claim_token, payload FROM claim_and_start_tasks('product_resync', 'w1');
-- claim_tasks followed by start_task for each task, in one transaction: what a worker calls
-- when it runs what it claims right away. The tasks come back running, started_at set;
-- a worker holding several counts them all as running until it records their outcomes.
BEGIN
    RETURN QUERY
    SELECT * FROM _claim_tasks(claim_and_start_tasks.role, claim_and_start_tasks.worker_id,
                               claim_and_start_tasks.max_tasks, true);
END;
$$;

REVOKE ALL ON FUNCTION claim_and_start_tasks(text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION claim_and_start_tasks(text, text, integer) TO taskpool_worker;

COMMIT;
