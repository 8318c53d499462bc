-- Deploy taskpool:unregister_task_waits to pg
-- requires: register_task_waits

-- unregister_task_waits's home: its live body, unchanged from register_task_waits.
-- Change unregister_task_waits here, with `sqitch rework unregister_task_waits`.

BEGIN;
SET client_min_messages = 'warning';

-- unregister_task_waits
-- Ends the calling session's waits: for the tasks given, or all of them; returns how many ended.
CREATE OR REPLACE FUNCTION unregister_task_waits(task_ids bigint[] DEFAULT NULL)
RETURNS integer
LANGUAGE sql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- Example:
    --   SELECT unregister_task_waits();              -- every wait of this session
    --   SELECT unregister_task_waits(ARRAY[42, 43]);
    WITH gone AS (
        DELETE FROM task_result_waits w
        WHERE w.backend_pid = pg_backend_pid()
          AND (unregister_task_waits.task_ids IS NULL OR w.task_id = ANY (unregister_task_waits.task_ids))
        RETURNING 1
    )
    SELECT count(*)::integer FROM gone;
$$;

COMMIT;
