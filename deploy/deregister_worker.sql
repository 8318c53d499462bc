-- Deploy taskpool:deregister_worker to pg
-- requires: task_workers
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- deregister_worker
-- Removes a stopping worker from the registry; false when it was not registered.
CREATE FUNCTION deregister_worker(worker_id text)
RETURNS boolean
LANGUAGE sql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- Example:
    --   SELECT deregister_worker('w1');
    WITH gone AS (
        DELETE FROM task_workers w WHERE w.worker_id = deregister_worker.worker_id RETURNING 1
    )
    SELECT EXISTS (SELECT FROM gone);
$$;

REVOKE ALL ON FUNCTION deregister_worker(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION deregister_worker(text) TO taskpool_worker;

COMMIT;
