-- Deploy taskpool:tg_worker_tasks__release_concurrency_slots to pg
-- requires: concurrency_limits
-- requires: _wake_waiting_workers

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__release_concurrency_slots
-- Frees the concurrency slots of a task that stops being claimed or running (or is deleted), and wakes a waiting worker of its role.
CREATE FUNCTION tg_worker_tasks__release_concurrency_slots()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Every way out of claimed/running passes here (complete, fail, retry, release, snooze, cancel,
-- stale recovery, an operator's complete or delete, the move to the history), so no caller has
-- to remember the counts. A task frees only its own slot rows: transitions of different tasks
-- never wait on each other here. A task held back only by the cap was skipped by a claim that
-- came back empty, whose worker may now sleep: one waiting worker of the role is woken (at commit).
BEGIN
    UPDATE concurrency_slots s SET task_id = NULL WHERE s.task_id = OLD.id;
    IF FOUND THEN
        PERFORM _wake_waiting_workers(OLD.role, 1);
    END IF;
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION tg_worker_tasks__release_concurrency_slots() FROM PUBLIC;

-- Row-level with a WHEN clause: heartbeats, claims and starts never fire it. An attempt's end
-- does, limits or not: one probe of concurrency_slots_task_idx (no row when nothing is capped).
CREATE TRIGGER _900_release_concurrency_slots
    AFTER UPDATE OF status ON worker_tasks
    FOR EACH ROW
    WHEN (OLD.status IN ('claimed', 'running') AND NEW.status NOT IN ('claimed', 'running'))
    EXECUTE FUNCTION tg_worker_tasks__release_concurrency_slots();
CREATE TRIGGER _900_release_concurrency_slots_of_deleted
    AFTER DELETE ON worker_tasks
    FOR EACH ROW
    WHEN (OLD.status IN ('claimed', 'running'))
    EXECUTE FUNCTION tg_worker_tasks__release_concurrency_slots();

COMMIT;
