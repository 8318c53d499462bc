-- Deploy taskpool:release_task to pg
-- requires: snooze_task
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- release_task
-- Hands a worker's task back to the pool, ready now, without spending a retry (e.g. on shutdown).
CREATE FUNCTION release_task(task_id bigint, worker_id text, attempt integer)
RETURNS worker_tasks
LANGUAGE sql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- Example:
    --   SELECT status FROM release_task(42, 'w1', 1);   -- pending
    SELECT * FROM snooze_task(release_task.task_id, release_task.worker_id, release_task.attempt, taskpool_now());
$$;

REVOKE ALL ON FUNCTION release_task(bigint, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION release_task(bigint, text, integer) TO taskpool_worker;

COMMIT;
