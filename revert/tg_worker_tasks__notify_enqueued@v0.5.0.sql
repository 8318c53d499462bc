-- Revert taskpool:tg_worker_tasks__notify_enqueued from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.2.0 body: one broadcast per role on taskpool_task_enqueued.
CREATE OR REPLACE FUNCTION tg_worker_tasks__notify_enqueued()
RETURNS trigger
LANGUAGE plpgsql
SECURITY INVOKER
RESET search_path
AS $$
BEGIN
    -- One notification per role per statement, payload the role: notifications coalesce and are
    -- size-limited, so they only say "look", and a woken worker always claims to find out.
    -- Tasks scheduled later wake nobody; workers find them by polling.
    PERFORM pg_notify('taskpool_task_enqueued', ready.role)
    FROM (SELECT DISTINCT n.role FROM new_tasks n WHERE n.scheduled_for <= taskpool_now()) AS ready;
    RETURN NULL;
END;
$$;

COMMIT;
