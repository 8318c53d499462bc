-- Deploy taskpool:_lock_schedule to pg
-- requires: task_schedules

BEGIN;
SET client_min_messages = 'warning';

-- _lock_schedule
-- Locks and returns the schedule of that name, or raises naming the schedules there are.
CREATE FUNCTION _lock_schedule(name text)
RETURNS task_schedules
LANGUAGE plpgsql
AS $$
DECLARE
    v_schedule task_schedules;
BEGIN
    IF _lock_schedule.name IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'a schedule name is required';
    END IF;
    SELECT * INTO v_schedule FROM task_schedules s WHERE s.name = _lock_schedule.name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002',
            MESSAGE = format('schedule %L does not exist', _lock_schedule.name),
            HINT = 'Schedules: ' || coalesce((SELECT string_agg(s.name, ', ' ORDER BY s.name) FROM task_schedules s), 'none') || '.';
    END IF;
    RETURN v_schedule;
END;
$$;

REVOKE ALL ON FUNCTION _lock_schedule(text) FROM PUBLIC;

COMMIT;
