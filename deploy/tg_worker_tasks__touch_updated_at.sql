-- Deploy taskpool:tg_worker_tasks__touch_updated_at to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__touch_updated_at
-- Stamps updated_at on every change to a task, whoever makes it.
CREATE FUNCTION tg_worker_tasks__touch_updated_at()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    NEW.updated_at := taskpool_now();
    RETURN NEW;
END;
$$;

CREATE TRIGGER _100_touch_updated_at
    BEFORE UPDATE ON worker_tasks
    FOR EACH ROW EXECUTE FUNCTION tg_worker_tasks__touch_updated_at();

REVOKE ALL ON FUNCTION tg_worker_tasks__touch_updated_at() FROM PUBLIC;

COMMIT;
