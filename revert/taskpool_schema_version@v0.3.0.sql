-- Revert taskpool:taskpool_schema_version from pg

BEGIN;
SET client_min_messages = 'warning';

-- taskpool_schema_version
-- The version of the SQL interface this database holds; workers check it at start-up.
CREATE OR REPLACE FUNCTION taskpool_schema_version()
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    -- Example:
    --   SELECT taskpool_schema_version();   -- '0.2.0'
    -- 0.2.0: schedules (tick_schedules, trigger_schedule, update_schedule, generate_resync_tasks)
    -- and capacity (v_worker_capacity, worker_capacity). Rework this change (sqitch rework)
    -- whenever a release adds or changes a function that pyworker calls, so that an older schema
    -- is named as such instead of failing mid-task.
    SELECT '0.2.0'::text;
$$;

COMMIT;
