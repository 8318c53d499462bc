-- Revert taskpool:mark_worker_waiting from pg
-- Back to v0.7.0's mark_worker_waiting(worker_id, role), without the lock of its worker's row.

BEGIN;
SET client_min_messages = 'warning';

-- mark_worker_waiting(worker_id, role)
-- A worker that found no ready task of one of its roles says it sleeps until a task of that role
-- is ready; true when it was not marked for that role yet.
CREATE OR REPLACE FUNCTION mark_worker_waiting(worker_id text, role text)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT mark_worker_waiting('w1', 'product_resync');  -- true: claim once more, then sleep on
--                                      -- LISTEN worker_wake_channel('w1') or the poll interval
-- An enqueue or requeue that makes tasks of the role ready wakes waiting workers, one per task,
-- with a NOTIFY on their worker_wake_channel (payload: the role), and unmarks them for that role;
-- so does the worker's next successful claim of the role. Workers must claim once more after a
-- true answer: a task committed just before the mark was not there for the claim that came back
-- empty. The role lock the mark takes at its commit makes that one extra claim enough (see
-- task_wake_requests); it is never held while the mark's transaction is open.
BEGIN
    PERFORM FROM task_worker_roles wr
    WHERE wr.worker_id = mark_worker_waiting.worker_id AND wr.role = mark_worker_waiting.role;
    IF NOT FOUND THEN
        IF NOT EXISTS (SELECT FROM task_workers w WHERE w.worker_id = mark_worker_waiting.worker_id) THEN
            RAISE EXCEPTION USING
                ERRCODE = 'P0002',
                MESSAGE = format('worker %L is not registered', mark_worker_waiting.worker_id),
                HINT = 'Call register_worker first.';
        END IF;
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('worker %L does not serve role %L', mark_worker_waiting.worker_id,
                             mark_worker_waiting.role),
            HINT = 'It serves: ' || coalesce((SELECT string_agg(wr.role, ', ' ORDER BY wr.role) FROM task_worker_roles wr
                                              WHERE wr.worker_id = mark_worker_waiting.worker_id), 'no role') || '.';
    END IF;
    INSERT INTO task_worker_waits (worker_id, role)
    VALUES (mark_worker_waiting.worker_id, mark_worker_waiting.role)
    ON CONFLICT ON CONSTRAINT task_worker_waits_pkey DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO task_wake_requests AS r (backend_pid, role, marking)
    VALUES (pg_backend_pid(), mark_worker_waiting.role, true)
    ON CONFLICT ON CONSTRAINT task_wake_requests_pkey DO UPDATE SET marking = true;
    RETURN true;
END;
$$;

REVOKE ALL ON FUNCTION mark_worker_waiting(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mark_worker_waiting(text, text) TO taskpool_worker;

-- mark_worker_waiting(worker_id)
-- The same for every role the worker serves; true when it was not marked for one of them yet.
CREATE OR REPLACE FUNCTION mark_worker_waiting(worker_id text)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_role   text;
    v_marked boolean := false;
    v_found  boolean := false;
BEGIN
    FOR v_role IN
        SELECT wr.role FROM task_worker_roles wr
        WHERE wr.worker_id = mark_worker_waiting.worker_id
        ORDER BY wr.role
    LOOP
        v_found := true;
        v_marked := mark_worker_waiting(mark_worker_waiting.worker_id, v_role) OR v_marked;
    END LOOP;
    IF NOT v_found THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002',
            MESSAGE = format('worker %L is not registered', mark_worker_waiting.worker_id),
            HINT = 'Call register_worker first.';
    END IF;
    RETURN v_marked;
END;
$$;

COMMIT;
