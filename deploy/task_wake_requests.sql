-- Deploy taskpool:task_wake_requests to pg
-- requires: task_worker_waits
-- requires: worker_wake_channel

BEGIN;
SET client_min_messages = 'warning';

-- task_wake_requests
-- What a transaction has to do for waiting workers when it commits: per role, how many of them
-- to wake (tasks it made ready) and whether it marked one waiting. A row lives only inside its
-- transaction: the commit-time trigger below takes it out, a rollback never made it. Unlogged:
-- no committed row ever needs to survive a crash.
--
-- Why at commit: the lost wake-up. A worker's claim finds nothing, an enqueue commits, the worker
-- marks itself waiting and sleeps. The worker claims once more after marking, and a per-role
-- lock makes that enough: a marker holds it exclusively, a waker shares it, each up to its
-- commit. If the waker locks first, the mark commits after the enqueue and the extra claim sees
-- its tasks; if the marker locks first, the waker waits for the mark's commit and its query, a
-- new statement with a new snapshot, sees the mark and wakes the worker. Taken while a statement
-- runs, that lock was held for the rest of the transaction, so one producer's open transaction
-- held up every marker of its role and, queued behind them, every other producer. Taken at
-- commit it is held for the commit alone, and no session waits on another's open transaction.
CREATE UNLOGGED TABLE task_wake_requests (
    backend_pid  integer NOT NULL,
    role         text    NOT NULL,
    ready        bigint  NOT NULL DEFAULT 0,
    marking      boolean NOT NULL DEFAULT false,
    PRIMARY KEY (backend_pid, role)
);

COMMENT ON TABLE task_wake_requests IS
    'Wake-ups pending in open transactions (one row per session and role), done and removed at commit; always empty to other sessions.';

-- tg_task_wake_requests__wake_at_commit
-- At commit, takes the role locks of this transaction's wake-up requests and wakes the waiting workers they ask for.
CREATE FUNCTION tg_task_wake_requests__wake_at_commit()
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

REVOKE ALL ON FUNCTION tg_task_wake_requests__wake_at_commit() FROM PUBLIC;

-- Deferred: it fires when the transaction commits (or at SET CONSTRAINTS ... IMMEDIATE).
CREATE CONSTRAINT TRIGGER task_wake_requests_wake_at_commit
    AFTER INSERT ON task_wake_requests
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION tg_task_wake_requests__wake_at_commit();

COMMIT;
