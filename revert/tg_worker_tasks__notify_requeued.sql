-- Revert taskpool:tg_worker_tasks__notify_requeued from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.2.0 body: a broadcast to the role on taskpool_task_enqueued.
CREATE OR REPLACE FUNCTION tg_worker_tasks__notify_requeued()
RETURNS trigger
LANGUAGE plpgsql
SECURITY INVOKER
RESET search_path
AS $$
BEGIN
    IF NEW.scheduled_for <= taskpool_now() THEN
        PERFORM pg_notify('taskpool_task_enqueued', NEW.role);
    END IF;
    RETURN NULL;
END;
$$;

COMMIT;
