-- Deploy taskpool:tg_worker_tasks__notify_requeued to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__notify_requeued
-- Wakes idle workers when a task goes back to pending and is ready now (released, retried by an operator).
CREATE FUNCTION tg_worker_tasks__notify_requeued()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF NEW.scheduled_for <= taskpool_now() THEN
        PERFORM pg_notify('taskpool_task_enqueued', NEW.role);
    END IF;
    RETURN NULL;
END;
$$;

-- Row-level with a WHEN clause, unlike _900_notify_enqueued: claims, heartbeats and completions
-- update far more rows than return to the pool, and the WHEN test costs them nothing.
CREATE TRIGGER _900_notify_requeued
    AFTER UPDATE OF status ON worker_tasks
    FOR EACH ROW
    WHEN (NEW.status = 'pending' AND OLD.status <> 'pending')
    EXECUTE FUNCTION tg_worker_tasks__notify_requeued();

REVOKE ALL ON FUNCTION tg_worker_tasks__notify_requeued() FROM PUBLIC;

COMMIT;
