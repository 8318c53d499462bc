-- Revert taskpool:_claim_tasks from pg: back to the body of deploy/_claim_tasks@v0.8.0.sql

BEGIN;
SET client_min_messages = 'warning';

-- _claim_tasks
-- The claim behind claim_tasks and claim_and_start_tasks: up to max_tasks ready tasks of a role,
-- at most one per store, claimed for a worker and, when start is true, started too.
CREATE OR REPLACE FUNCTION _claim_tasks(role text, worker_id text, max_tasks integer, start boolean)
RETURNS SETOF worker_tasks
LANGUAGE plpgsql
SET search_path = public, pg_temp
-- PL/pgSQL caches a statement's plan, but by default it plans it again for the call's values
-- whenever that custom plan looks cheaper than the generic one, which for the claim below is
-- always: measured under 8 concurrent claimers, that planning was most of the claim's cost
-- (one plan per call, about 0.8 ms each). The generic plan walks the same indexes.
SET plan_cache_mode = force_generic_plan
-- The generic plan cannot know the LIMIT, so it costs the claim as if it read a tenth of the
-- role's pending tasks: past jit_above_cost once a few hundred thousand are pending, and JIT
-- then compiled the claim on every call (30 ms and more at 300,000 pending, measured by the
-- depth figure of make bench). The claim reads a few index pages: JIT never pays.
SET jit = off
AS $$
-- Not for callers: claim_tasks and claim_and_start_tasks (SECURITY DEFINER) call it. A paused
-- role (task_roles.paused_at) hands out nothing. Tasks of a platform whose circuit is open
-- (platform_governance.open_until in the future) or that an operator disabled
-- (platform_governance.enabled false) are skipped.
-- A task whose attempt counter is spent (attempt at the largest integer) fails here, alone,
-- rather than making the claim overflow for the whole role.
DECLARE
    -- The attempt column is an integer: a task at its largest value has no next attempt.
    c_last_attempt constant integer := 2147483647;
    v_now          timestamptz := taskpool_now();
    v_paused       boolean;
    v_chosen       bigint[];
    v_spent        bigint[];
    v_claimed      bigint := 0;
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

    -- One primary-key probe: an unknown role is an error, a paused one has nothing to hand out.
    -- A pause that commits while this claim runs does not stop it: the claim after it sees it.
    SELECT r.paused_at IS NOT NULL INTO v_paused FROM task_roles r WHERE r.role = _claim_tasks.role;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown role %L', _claim_tasks.role),
            HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
    END IF;
    IF v_paused THEN
        RETURN;
    END IF;

    -- Per-store exclusion, without a subtransaction. Two statements, each with its own snapshot
    -- (a volatile PL/pgSQL function takes a new one per statement under READ COMMITTED):
    -- 1. Lock the candidates: ready tasks in claim order, rows another claimer holds skipped
    --    (SKIP LOCKED), stores busy in this snapshot skipped (an index probe into the few
    --    active tasks), and the transaction-scoped advisory lock of each task's store taken,
    --    stores another claimer is taking at this instant skipped.
    -- 2. Claim them, checking again that their stores are free. A rival that claimed one of these
    --    stores held its advisory lock until it committed, and released it only after its commit
    --    was visible to new snapshots: this statement's snapshot, taken after the lock was ours,
    --    sees its task active, and the candidate is left alone instead of tripping
    --    worker_tasks_one_active_per_dispensary_idx (which still guards any other writer).
    -- A try that claimed nothing because of such a race, or that met only spent tasks, runs
    -- again (its snapshot now sees the rival) so that it costs the worker no poll interval;
    -- after a few tries the claim reports no task, which a worker treats like an empty queue.
    FOR v_try IN 1..5 LOOP
        WITH
        candidates AS (
            SELECT t.id, t.dispensary_id, t.priority, t.created_at, t.attempt
            FROM worker_tasks t
            WHERE t.role = _claim_tasks.role
              AND t.status = 'pending'
              AND t.scheduled_for <= v_now
              AND (t.platform IS NULL
                   OR NOT EXISTS (SELECT FROM platform_governance g
                                  WHERE g.platform = t.platform
                                    AND (g.open_until > v_now OR NOT g.enabled)))
              AND (t.dispensary_id IS NULL
                   -- OFFSET 0 keeps this a probe of the store's entry in
                   -- worker_tasks_one_active_per_dispensary_idx: without it the generic plan
                   -- hashes every active task of every store at each claim.
                   OR (NOT EXISTS (SELECT FROM worker_tasks busy
                                   WHERE busy.dispensary_id = t.dispensary_id
                                     AND busy.status IN ('claimed', 'running')
                                   OFFSET 0)
                       -- 1952543595 = 'task' in ASCII: taskpool's advisory-lock namespace
                       AND pg_try_advisory_xact_lock(1952543595, t.dispensary_id)))
            ORDER BY t.priority DESC, t.created_at, t.id
            LIMIT _claim_tasks.max_tasks
            FOR UPDATE OF t SKIP LOCKED
        ),
        -- one task per store, so a batch obeys the store rule too
        chosen AS (
            SELECT DISTINCT ON (coalesce(c.dispensary_id::bigint, -c.id)) c.id
            FROM candidates c
            WHERE c.attempt < c_last_attempt
            ORDER BY coalesce(c.dispensary_id::bigint, -c.id), c.priority DESC, c.created_at, c.id
        )
        SELECT (SELECT array_agg(chosen.id) FROM chosen),
               (SELECT array_agg(c.id) FROM candidates c WHERE c.attempt = c_last_attempt)
        INTO v_chosen, v_spent;

        -- A spent task has no next attempt: it fails for good, saying why. A statement of its
        -- own, run only when there is one: as a data-modifying CTE of the claim it was set up
        -- (its indexes opened, its triggers prepared) on every claim to update nothing.
        IF v_spent IS NOT NULL THEN
            UPDATE worker_tasks t
            SET status = 'failed',
                error_message = format('attempt %s is the last the attempt counter holds: '
                                       'the task cannot be claimed again', t.attempt)
            WHERE t.id = ANY (v_spent);
        END IF;

        IF v_chosen IS NOT NULL THEN
            -- the claim itself: a new attempt, owned by this worker
            RETURN QUERY
            WITH claimed AS (
                UPDATE worker_tasks t
                SET status = CASE WHEN _claim_tasks.start THEN 'running' ELSE 'claimed' END,
                    worker_id = _claim_tasks.worker_id,
                    attempt = t.attempt + 1,
                    -- the fence beside the attempt: a claim the database forgot (lost WAL)
                    -- may have had this attempt number, never this token
                    claim_token = gen_random_uuid(),
                    claimed_at = v_now,
                    started_at = CASE WHEN _claim_tasks.start THEN v_now END,
                    last_heartbeat_at = v_now,
                    error_message = NULL
                WHERE t.id = ANY (v_chosen)
                  AND (t.dispensary_id IS NULL
                       OR NOT EXISTS (SELECT FROM worker_tasks busy
                                      WHERE busy.dispensary_id = t.dispensary_id
                                        AND busy.status IN ('claimed', 'running')
                                      OFFSET 0))
                RETURNING t.*
            )
            SELECT * FROM claimed c ORDER BY c.priority DESC, c.created_at, c.id;
            GET DIAGNOSTICS v_claimed = ROW_COUNT;
        END IF;
        -- Done when something was claimed, or when the queue had nothing to offer (no candidate
        -- and no spent task): only a lost race or spent tasks are worth another try.
        EXIT WHEN v_claimed > 0 OR (v_chosen IS NULL AND v_spent IS NULL);
    END LOOP;

    -- A worker that was waiting for the role is at work on it again: the next enqueue need not
    -- wake it for this role (one serving several roles still waits for the others).
    IF v_claimed > 0 THEN
        DELETE FROM task_worker_waits w WHERE w.worker_id = _claim_tasks.worker_id AND w.role = _claim_tasks.role;
    END IF;
END;
$$;

REVOKE ALL ON FUNCTION _claim_tasks(text, text, integer, boolean) FROM PUBLIC;

COMMIT;
