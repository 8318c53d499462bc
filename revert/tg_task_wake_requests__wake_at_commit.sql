-- Revert taskpool:tg_task_wake_requests__wake_at_commit from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the body task_wake_requests made: a subtransaction around every role lock.

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
    v_roles    text[];
    v_ready    bigint[];
    v_marking  boolean[];
    v_notified bigint;
BEGIN
    -- The first request to fire does all of this transaction's, roles in a fixed order so that
    -- two committing transactions take the role locks in the same order; the others find none.
    WITH taken AS (
        DELETE FROM task_wake_requests r
        WHERE r.backend_pid = pg_backend_pid()
        RETURNING r.role, r.ready, r.marking
    )
    SELECT array_agg(t.role ORDER BY t.role), array_agg(t.ready ORDER BY t.role), array_agg(t.marking ORDER BY t.role)
    INTO v_roles, v_ready, v_marking
    FROM taken t;

    FOR i IN 1..coalesce(array_length(v_roles, 1), 0) LOOP
        BEGIN
            -- 2002873189 = 'wake' in ASCII: the namespace of the per-role wake-up locks.
            IF v_marking[i] THEN
                PERFORM pg_advisory_xact_lock(2002873189, hashtext(v_roles[i]));
            ELSE
                PERFORM pg_advisory_xact_lock_shared(2002873189, hashtext(v_roles[i]));
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
        CONTINUE WHEN v_ready[i] = 0;
        -- A woken worker is unmarked here, so concurrent wakers wake other workers (SKIP LOCKED)
        -- rather than the same one twice. A worker that died while waiting keeps its mark until
        -- deregistered; preferring fresh heartbeats keeps the wake-ups for the living.
        WITH chosen AS (
            SELECT w.worker_id
            FROM task_worker_waits w
            JOIN task_workers tw ON tw.worker_id = w.worker_id
            WHERE w.role = v_roles[i]
            ORDER BY tw.last_seen_at DESC, w.waiting_since
            LIMIT v_ready[i]
            FOR UPDATE OF w SKIP LOCKED
        ),
        woken AS (
            DELETE FROM task_worker_waits w USING chosen
            WHERE w.worker_id = chosen.worker_id
            RETURNING w.worker_id
        )
        SELECT count(pg_notify(worker_wake_channel(woken.worker_id), v_roles[i]))
        INTO v_notified
        FROM woken;
    END LOOP;
    RETURN NULL;
END;
$$;

COMMIT;
