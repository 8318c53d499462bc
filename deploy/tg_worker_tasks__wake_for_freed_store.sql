-- Deploy taskpool:tg_worker_tasks__wake_for_freed_store to pg
-- requires: _wake_waiting_workers

BEGIN;
SET client_min_messages = 'warning';

-- The store's ready tasks, in claim order: what the trigger below looks up when a store frees up.
CREATE INDEX worker_tasks_pending_by_dispensary_idx
    ON worker_tasks (dispensary_id, priority DESC, created_at, id)
    WHERE status = 'pending' AND dispensary_id IS NOT NULL;
COMMENT ON INDEX worker_tasks_pending_by_dispensary_idx IS
    'Serves the freed-store wake-up: a store''s pending tasks in claim order.';

-- tg_worker_tasks__wake_for_freed_store
-- Wakes one waiting worker for the next ready task of a store whose claimed or running task ended.
CREATE FUNCTION tg_worker_tasks__wake_for_freed_store()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- A task held back only by per-store exclusion woke nobody when its store freed up: a worker of
-- its role had found nothing to claim and slept its whole poll interval. A task that goes back
-- to pending ready now wakes a worker of its own role (_900_notify_requeued); this wakes one for
-- the store's best other ready task, whatever its role.
DECLARE
    v_role text;
BEGIN
    SELECT t.role INTO v_role
    FROM worker_tasks t
    WHERE t.dispensary_id = NEW.dispensary_id
      AND t.status = 'pending'
      AND t.dispensary_id IS NOT NULL
      AND t.scheduled_for <= taskpool_now()
      AND t.id <> NEW.id
    ORDER BY t.priority DESC, t.created_at, t.id
    LIMIT 1;
    IF FOUND THEN
        PERFORM _wake_waiting_workers(v_role, 1);
    END IF;
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION tg_worker_tasks__wake_for_freed_store() FROM PUBLIC;

-- Row-level with a WHEN clause: heartbeats and claims update far more rows than free a store.
CREATE TRIGGER _900_wake_for_freed_store
    AFTER UPDATE OF status ON worker_tasks
    FOR EACH ROW
    WHEN (OLD.status IN ('claimed', 'running') AND NEW.status NOT IN ('claimed', 'running')
          AND NEW.dispensary_id IS NOT NULL)
    EXECUTE FUNCTION tg_worker_tasks__wake_for_freed_store();

COMMIT;
