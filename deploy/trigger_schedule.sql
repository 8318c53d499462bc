-- Deploy taskpool:trigger_schedule to pg
-- requires: _lock_schedule
-- requires: _run_schedule

BEGIN;
SET client_min_messages = 'warning';

-- trigger_schedule
-- Runs one schedule now, enabled or not, without moving its next_run_at; returns the schedule.
CREATE FUNCTION trigger_schedule(name text)
RETURNS task_schedules
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT name, last_task_count FROM trigger_schedule('store_discovery');
-- An error in the run is raised to the caller, and nothing is created or recorded.
DECLARE
    v_schedule task_schedules := _lock_schedule(trigger_schedule.name);
    v_count    integer;
BEGIN
    v_count := _run_schedule(v_schedule);
    UPDATE task_schedules s
    SET last_run_at = taskpool_now(), last_task_count = v_count, last_error = NULL
    WHERE s.id = v_schedule.id
    RETURNING s.* INTO v_schedule;
    RETURN v_schedule;
END;
$$;

REVOKE ALL ON FUNCTION trigger_schedule(text) FROM PUBLIC;

COMMIT;
