-- Revert taskpool:mark_worker_waiting from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to one wait per worker: the per-role form goes, the other is v0.5.0's.
DROP FUNCTION mark_worker_waiting(text, text);

-- mark_worker_waiting
-- A worker that found no ready task says it sleeps until woken; true when it was not marked yet.
CREATE OR REPLACE FUNCTION mark_worker_waiting(worker_id text)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT mark_worker_waiting('w1');   -- true: claim once more, then sleep on
--                                       -- LISTEN worker_wake_channel('w1') or the poll interval
-- An enqueue or requeue that makes tasks of the worker's role ready wakes waiting workers, one per
-- task, with a NOTIFY on their worker_wake_channel (payload: the role), and unmarks them; so does
-- the worker's next successful claim. Workers must claim once more after a true answer: a task
-- committed just before the mark was not there for the claim that came back empty. The role lock
-- the mark takes at its commit makes that one extra claim enough (see task_wake_requests); it is
-- never held while the mark's transaction is open, nor waits for an open enqueue.
DECLARE
    v_role text;
BEGIN
    SELECT w.role INTO v_role FROM task_workers w WHERE w.worker_id = mark_worker_waiting.worker_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002',
            MESSAGE = format('worker %L is not registered', mark_worker_waiting.worker_id),
            HINT = 'Call register_worker first.';
    END IF;
    INSERT INTO task_worker_waits (worker_id, role)
    VALUES (mark_worker_waiting.worker_id, v_role)
    ON CONFLICT ON CONSTRAINT task_worker_waits_pkey DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO task_wake_requests AS r (backend_pid, role, marking)
    VALUES (pg_backend_pid(), v_role, true)
    ON CONFLICT (backend_pid, role) DO UPDATE SET marking = true;
    RETURN true;
END;
$$;

COMMIT;
