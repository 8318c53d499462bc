-- Deploy taskpool:tg_worker_tasks__notify_requeued to pg
-- requires: tg_worker_tasks__notify_requeued@v0.2.0
-- requires: _wake_waiting_workers

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__notify_requeued
-- Wakes one waiting worker of the role when a task goes back to pending, ready now.
CREATE OR REPLACE FUNCTION tg_worker_tasks__notify_requeued()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.scheduled_for <= taskpool_now() THEN
        PERFORM _wake_waiting_workers(NEW.role, 1);
    END IF;
    RETURN NULL;
END;
$$;

COMMIT;
