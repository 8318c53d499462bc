-- Revert taskpool:_claim_tasks from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.5.0 body: the claim in a BEGIN ... EXCEPTION block (a subtransaction per try),
-- planned afresh on every call.

-- _claim_tasks
-- The claim behind claim_tasks and claim_and_start_tasks: up to max_tasks ready tasks of a role,
-- at most one per store, claimed for a worker and, when start is true, started too.
CREATE OR REPLACE FUNCTION _claim_tasks(role text, worker_id text, max_tasks integer, start boolean)
RETURNS SETOF worker_tasks
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Not for callers: claim_tasks and claim_and_start_tasks (SECURITY DEFINER) call it. Tasks of a
-- platform whose circuit is open (platform_governance.open_until in the future) are skipped.
-- A task whose attempt counter is spent (attempt at the largest integer) fails here, alone,
-- rather than making the claim overflow for the whole role.
DECLARE
    -- The attempt column is an integer: a task at its largest value has no next attempt.
    c_last_attempt constant integer := 2147483647;
    v_now          timestamptz := taskpool_now();
    v_claimed      worker_tasks[];
    v_spent        bigint;
    v_constraint   text;
BEGIN
    IF _claim_tasks.role IS NULL OR _claim_tasks.worker_id IS NULL OR _claim_tasks.max_tasks IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'role, worker_id and max_tasks are all required';
    END IF;
    IF length(_claim_tasks.worker_id) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('worker_id must be 1 to 200 characters, not %s', length(_claim_tasks.worker_id));
    END IF;
    IF _claim_tasks.max_tasks NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('max_tasks %s is out of range', _claim_tasks.max_tasks),
            HINT = 'Claim from 1 to 1000 tasks at a time.';
    END IF;

    -- Per-store exclusion has two guards. The NOT EXISTS probe (an index probe into the few
    -- active tasks) skips stores that are busy in this statement's snapshot; the transaction-
    -- scoped advisory lock skips stores another claimer is taking at this instant. A claimer whose
    -- snapshot predates a rival's commit can still pick a store the rival just took; the unique
    -- index worker_tasks_one_active_per_dispensary_idx then refuses the UPDATE, and the claim
    -- simply runs again with a fresh snapshot. After a few such losses it reports no task,
    -- which a worker treats like an empty queue. A claim that met only spent tasks runs again
    -- too, so that they cost the worker no poll interval.
    FOR v_try IN 1..5 LOOP
        BEGIN
            WITH
            -- ready tasks of the role in claim order, locked; rows other claimers hold are skipped
            candidates AS (
                SELECT t.id, t.dispensary_id, t.priority, t.created_at, t.attempt
                FROM worker_tasks t
                WHERE t.role = _claim_tasks.role
                  AND t.status = 'pending'
                  AND t.scheduled_for <= v_now
                  AND (t.platform IS NULL
                       OR NOT EXISTS (SELECT FROM platform_governance g
                                      WHERE g.platform = t.platform AND g.open_until > v_now))
                  AND (t.dispensary_id IS NULL
                       OR (NOT EXISTS (SELECT FROM worker_tasks busy
                                       WHERE busy.dispensary_id = t.dispensary_id
                                         AND busy.status IN ('claimed', 'running'))
                           -- 1952543595 = 'task' in ASCII: taskpool's advisory-lock namespace
                           AND pg_try_advisory_xact_lock(1952543595, t.dispensary_id)))
                ORDER BY t.priority DESC, t.created_at, t.id
                LIMIT _claim_tasks.max_tasks
                FOR UPDATE OF t SKIP LOCKED
            ),
            -- a spent task has no next attempt: it fails for good, saying why (while attempts
            -- stay below the limit this updates no row and costs nothing)
            spent AS (
                UPDATE worker_tasks t
                SET status = 'failed',
                    error_message = format('attempt %s is the last the attempt counter holds: '
                                           'the task cannot be claimed again', t.attempt)
                FROM candidates c
                WHERE t.id = c.id AND c.attempt = c_last_attempt
                RETURNING t.id
            ),
            -- one task per store, so a batch obeys the store rule too
            chosen AS (
                SELECT DISTINCT ON (coalesce(c.dispensary_id::bigint, -c.id)) c.id
                FROM candidates c
                WHERE c.attempt < c_last_attempt
                ORDER BY coalesce(c.dispensary_id::bigint, -c.id), c.priority DESC, c.created_at, c.id
            ),
            -- the claim itself: a new attempt, owned by this worker
            claimed AS (
                UPDATE worker_tasks t
                SET status = CASE WHEN _claim_tasks.start THEN 'running' ELSE 'claimed' END,
                    worker_id = _claim_tasks.worker_id,
                    attempt = t.attempt + 1,
                    claimed_at = v_now,
                    started_at = CASE WHEN _claim_tasks.start THEN v_now END,
                    last_heartbeat_at = v_now,
                    error_message = NULL
                FROM chosen
                WHERE t.id = chosen.id
                RETURNING t
            )
            SELECT array_agg(claimed.t ORDER BY (claimed.t).priority DESC, (claimed.t).created_at, (claimed.t).id),
                   (SELECT count(*) FROM spent)
            INTO v_claimed, v_spent
            FROM claimed;
            EXIT WHEN v_claimed IS NOT NULL OR v_spent = 0;
        EXCEPTION WHEN unique_violation THEN
            GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
            IF v_constraint IS DISTINCT FROM 'worker_tasks_one_active_per_dispensary_idx' THEN
                RAISE;
            END IF;
        END;
    END LOOP;

    IF v_claimed IS NULL AND NOT EXISTS (SELECT FROM task_roles r WHERE r.role = _claim_tasks.role) THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown role %L', _claim_tasks.role),
            HINT = 'Known roles: ' || (SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r) || '.';
    END IF;

    -- A worker that was waiting is at work again: the next enqueue need not wake it.
    IF v_claimed IS NOT NULL THEN
        DELETE FROM task_worker_waits w WHERE w.worker_id = _claim_tasks.worker_id;
    END IF;

    -- Returned only now, outside the retry block: rows of a rolled-back attempt never escape.
    RETURN QUERY SELECT * FROM unnest(v_claimed);
END;
$$;

REVOKE ALL ON FUNCTION _claim_tasks(text, text, integer, boolean) FROM PUBLIC;

COMMIT;
