-- Deploy taskpool:heartbeat_worker to pg
-- requires: task_workers
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- heartbeat_worker
-- Marks a registered worker as seen now, busy or idle; false when it is not registered.
CREATE FUNCTION heartbeat_worker(worker_id text)
RETURNS boolean
LANGUAGE sql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- Example:
    --   SELECT heartbeat_worker('w1');   -- false: register again
    WITH seen AS (
        UPDATE task_workers w SET last_seen_at = taskpool_now()
        WHERE w.worker_id = heartbeat_worker.worker_id
        RETURNING 1
    )
    SELECT EXISTS (SELECT FROM seen);
$$;

REVOKE ALL ON FUNCTION heartbeat_worker(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION heartbeat_worker(text) TO taskpool_worker;

COMMIT;
