-- Deploy taskpool:_wake_waiting_workers to pg
-- requires: task_worker_waits
-- requires: worker_wake_channel

BEGIN;
SET client_min_messages = 'warning';

-- _wake_waiting_workers
-- Wakes up to `ready` waiting workers of a role (the freshest heartbeats first); how many it woke.
CREATE FUNCTION _wake_waiting_workers(role text, ready bigint)
RETURNS integer
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Called by the enqueue and requeue triggers. A woken worker is unmarked here, in the waking
-- transaction, so concurrent enqueuers wake other workers (SKIP LOCKED) rather than the same one
-- twice. A worker that died while waiting keeps its mark until deregistered; preferring fresh
-- heartbeats (task_workers.last_seen_at) keeps the wake-ups for the living.
--
-- The lost wake-up: a worker's claim finds nothing, an enqueue commits, the worker marks itself
-- waiting and sleeps. The worker claims once more after marking; the locks make that enough.
-- mark_worker_waiting takes this lock exclusively, enqueuers share it, each until commit. If the
-- enqueuer locks first, the mark commits after the enqueue and the extra claim sees its tasks; if
-- the marker locks first, the enqueuer waits for the mark's commit and the query below, a new
-- statement with a new snapshot, sees the mark and wakes the worker.
DECLARE
    v_woken integer;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(2002873189, hashtext(_wake_waiting_workers.role));
    WITH chosen AS (
        SELECT w.worker_id
        FROM task_worker_waits w
        JOIN task_workers tw ON tw.worker_id = w.worker_id
        WHERE w.role = _wake_waiting_workers.role
        ORDER BY tw.last_seen_at DESC, w.waiting_since
        LIMIT _wake_waiting_workers.ready
        FOR UPDATE OF w SKIP LOCKED
    ),
    woken AS (
        DELETE FROM task_worker_waits w USING chosen
        WHERE w.worker_id = chosen.worker_id
        RETURNING w.worker_id
    )
    SELECT count(pg_notify(worker_wake_channel(woken.worker_id), _wake_waiting_workers.role))
    INTO v_woken
    FROM woken;
    RETURN v_woken;
END;
$$;

REVOKE ALL ON FUNCTION _wake_waiting_workers(text, bigint) FROM PUBLIC;

COMMIT;
