-- Deploy taskpool:taskpool_schema_version to pg
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- taskpool_schema_version
-- The version of the SQL interface this database holds; workers check it at start-up.
CREATE FUNCTION taskpool_schema_version()
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    -- Example:
    --   SELECT taskpool_schema_version();   -- '0.1.0'
    -- Rework this change (sqitch rework) whenever a release adds or changes a function that
    -- pyworker calls, so that an older schema is named as such instead of failing mid-task.
    SELECT '0.1.0'::text;
$$;

REVOKE ALL ON FUNCTION taskpool_schema_version() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskpool_schema_version() TO taskpool_worker;

COMMIT;
