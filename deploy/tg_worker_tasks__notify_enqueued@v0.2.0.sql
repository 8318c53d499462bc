-- Deploy taskpool:tg_worker_tasks__notify_enqueued to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__notify_enqueued
-- Wakes idle workers of each role that an INSERT statement gave a ready task.
CREATE FUNCTION tg_worker_tasks__notify_enqueued()
RETURNS trigger
LANGUAGE plpgsql
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

CREATE TRIGGER _900_notify_enqueued
    AFTER INSERT ON worker_tasks
    REFERENCING NEW TABLE AS new_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION tg_worker_tasks__notify_enqueued();

REVOKE ALL ON FUNCTION tg_worker_tasks__notify_enqueued() FROM PUBLIC;

COMMIT;
