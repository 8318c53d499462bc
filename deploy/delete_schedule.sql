-- Deploy taskpool:delete_schedule to pg
-- requires: _lock_schedule

BEGIN;
SET client_min_messages = 'warning';

-- delete_schedule
-- Deletes a schedule; returns it as it was. The tasks it made stay.
CREATE FUNCTION delete_schedule(name text)
RETURNS task_schedules
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT name FROM delete_schedule('weekday_digest');
-- An unknown name raises P0002, naming the schedules there are.
DECLARE
    v_schedule task_schedules := _lock_schedule(delete_schedule.name);
BEGIN
    DELETE FROM task_schedules s WHERE s.id = v_schedule.id;
    RETURN v_schedule;
END;
$$;

REVOKE ALL ON FUNCTION delete_schedule(text) FROM PUBLIC;
COMMENT ON FUNCTION delete_schedule(text) IS $$Deletes a schedule and returns it as it was; the tasks it made stay.
Example:
  SELECT name FROM delete_schedule('weekday_digest');$$;

COMMIT;
