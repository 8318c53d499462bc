-- Revert taskpool:mark_worker_waiting from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.3.0 body, which took the role lock at once, until its commit.

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
-- committed just before the mark was not there for the claim that came back empty. The lock below
-- makes that one extra claim enough (see _wake_waiting_workers).
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
    -- 2002873189 = 'wake' in ASCII: the namespace of the per-role wake-up locks.
    PERFORM pg_advisory_xact_lock(2002873189, hashtext(v_role));
    INSERT INTO task_worker_waits (worker_id, role)
    VALUES (mark_worker_waiting.worker_id, v_role)
    ON CONFLICT ON CONSTRAINT task_worker_waits_pkey DO NOTHING;
    RETURN FOUND;
END;
$$;

REVOKE ALL ON FUNCTION mark_worker_waiting(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mark_worker_waiting(text) TO taskpool_worker;

COMMIT;
