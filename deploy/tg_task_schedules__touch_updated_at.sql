-- Deploy taskpool:tg_task_schedules__touch_updated_at to pg
-- requires: task_schedules

BEGIN;
SET client_min_messages = 'warning';

-- tg_task_schedules__touch_updated_at
-- Stamps updated_at on every change to a schedule.
CREATE FUNCTION tg_task_schedules__touch_updated_at()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    NEW.updated_at := taskpool_now();
    RETURN NEW;
END;
$$;

REVOKE ALL ON FUNCTION tg_task_schedules__touch_updated_at() FROM PUBLIC;

CREATE TRIGGER _100_touch_updated_at
    BEFORE UPDATE ON task_schedules
    FOR EACH ROW EXECUTE FUNCTION tg_task_schedules__touch_updated_at();

COMMIT;
