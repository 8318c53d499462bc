-- Revert taskpool:set_taskpool_clock_offset from pg

BEGIN;

-- Whatever offset was set goes with the function: taskpool_now() reads the real clock again.
CREATE OR REPLACE FUNCTION taskpool_now() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT now();
$$;
DROP FUNCTION set_taskpool_clock_offset(interval);

COMMIT;
