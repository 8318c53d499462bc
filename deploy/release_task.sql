-- Deploy taskpool:release_task to pg
-- requires: release_task@v0.5.0
-- requires: snooze_task

BEGIN;
SET client_min_messages = 'warning';

DROP FUNCTION release_task(bigint, text, integer);

-- release_task
-- Hands a worker's task back to the pool, ready now, without spending a retry (e.g. on shutdown).
CREATE FUNCTION release_task(task_id bigint, worker_id text, attempt integer, claim_token uuid)
RETURNS worker_tasks
LANGUAGE sql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- Example:
    --   SELECT status FROM release_task(42, 'w1', 1, '5b0c1a9e-8f4e-4c61-9d55-0d6a3f2b7c10');   -- pending
    SELECT * FROM snooze_task(release_task.task_id, release_task.worker_id, release_task.attempt,
                              release_task.claim_token, taskpool_now());
$$;

REVOKE ALL ON FUNCTION release_task(bigint, text, integer, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION release_task(bigint, text, integer, uuid) TO taskpool_worker;

COMMIT;
