-- Deploy taskpool:tg_task_wake_requests__wake_at_commit to pg
-- requires: task_wake_requests

BEGIN;
SET client_min_messages = 'warning';

-- tg_task_wake_requests__wake_at_commit
-- At commit, takes the role locks of this transaction's wake-up requests and wakes the waiting workers they ask for.
CREATE OR REPLACE FUNCTION tg_task_wake_requests__wake_at_commit()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
-- The role lock is held only by transactions that are committing, for a moment; a longer wait
-- means a session ran its wake-ups early (SET CONSTRAINTS ALL IMMEDIATE) and holds the lock in
-- its open transaction. Rather than wait for it, go on without the lock: at worst a worker
-- marked just now sleeps until its poll interval instead of being woken.
SET lock_timeout = '1s'
AS $$
DECLARE
    v_request  record;
    v_locked   boolean;
    v_notified bigint;
BEGIN
    -- Every committing enqueue runs this, so it is kept to what a commit with no one to wake
    -- needs. The first request to fire does all of this transaction's, roles in a fixed order so
    -- that two committing transactions take the role locks in the same order; the others find
    -- none.
    FOR v_request IN
        WITH taken AS (
            DELETE FROM task_wake_requests r
            WHERE r.backend_pid = pg_backend_pid()
            RETURNING r.role, r.ready, r.marking
        )
        SELECT t.role, t.ready, t.marking FROM taken t ORDER BY t.role
    LOOP
        -- 2002873189 = 'wake' in ASCII: the namespace of the per-role wake-up locks. The lock is
        -- almost always free: tried first, it costs no subtransaction. Only a lock held by
        -- another session is waited for, in the subtransaction that lets lock_timeout give up.
        IF v_request.marking THEN
            v_locked := pg_try_advisory_xact_lock(2002873189, hashtext(v_request.role));
        ELSE
            v_locked := pg_try_advisory_xact_lock_shared(2002873189, hashtext(v_request.role));
        END IF;
        IF NOT v_locked THEN
            BEGIN
                IF v_request.marking THEN
                    PERFORM pg_advisory_xact_lock(2002873189, hashtext(v_request.role));
                ELSE
                    PERFORM pg_advisory_xact_lock_shared(2002873189, hashtext(v_request.role));
                END IF;
            EXCEPTION WHEN lock_not_available THEN
                NULL;
            END;
        END IF;
        -- Read under the lock, so a worker that marked itself before it sees its mark. Most
        -- commits find no one waiting: a plain index probe answers them.
        CONTINUE WHEN v_request.ready = 0
                   OR NOT EXISTS (SELECT FROM task_worker_waits w WHERE w.role = v_request.role);
        -- A woken worker is unmarked here, so concurrent wakers wake other workers (SKIP LOCKED)
        -- rather than the same one twice. A worker that died while waiting keeps its mark until
        -- deregistered; preferring fresh heartbeats keeps the wake-ups for the living.
        WITH chosen AS (
            SELECT w.worker_id
            FROM task_worker_waits w
            JOIN task_workers tw ON tw.worker_id = w.worker_id
            WHERE w.role = v_request.role
            ORDER BY tw.last_seen_at DESC, w.waiting_since
            LIMIT v_request.ready
            FOR UPDATE OF w SKIP LOCKED
        ),
        woken AS (
            DELETE FROM task_worker_waits w USING chosen
            WHERE w.worker_id = chosen.worker_id AND w.role = v_request.role
            RETURNING w.worker_id
        )
        SELECT count(pg_notify(worker_wake_channel(woken.worker_id), v_request.role))
        INTO v_notified
        FROM woken;
    END LOOP;
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION tg_task_wake_requests__wake_at_commit() FROM PUBLIC;

COMMIT;
