-- Revert taskpool:taskpool_schema_version from pg

BEGIN;

CREATE OR REPLACE FUNCTION taskpool_schema_version()
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    -- Example:
    --   SELECT taskpool_schema_version();   -- '0.1.0'
    -- Rework this change (sqitch rework) whenever a release adds or changes a function that
    -- pyworker calls, so that an older schema is named as such instead of failing mid-task.
    SELECT '0.1.0'::text;
$$;

COMMIT;
