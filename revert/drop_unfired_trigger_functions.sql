-- Revert taskpool:drop_unfired_trigger_functions from pg

-- The six functions as they were deployed before this change (from their own deploy files), fired
-- by nothing, as they were.

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__touch_updated_at
-- Stamps updated_at on every change to a task, whoever makes it.
CREATE FUNCTION tg_worker_tasks__touch_updated_at()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    NEW.updated_at := taskpool_now();
    RETURN NEW;
END;
$$;
REVOKE ALL ON FUNCTION tg_worker_tasks__touch_updated_at() FROM PUBLIC;

-- tg_worker_tasks__limit_idle_transaction
-- Ends a session that idles inside a transaction holding a worker's task longer than the task's stale threshold.
CREATE FUNCTION tg_worker_tasks__limit_idle_transaction()
RETURNS trigger
LANGUAGE plpgsql
AS $$
-- A worker that calls claim_task, start_task, heartbeat_task or complete_task inside an explicit
-- transaction and then goes silent holds the task's row lock (after a claim, its store's
-- advisory lock too) until that transaction ends. Other claimers skip the row, and
-- recover_stale_tasks skips it as a row a live worker is touching, so the task would stay held
-- for as long as the session lives. Here, a change to an active task sets
-- idle_in_transaction_session_timeout to the role's stale threshold for the rest of the
-- transaction (set_config(..., true), i.e. SET LOCAL; a function's own SET clauses do not undo
-- it): idle that long inside the transaction, the session is ended by the server, the
-- transaction rolls back, and the task goes back to the pool or to stale recovery. Autocommit
-- calls (pyworker's) never idle inside a transaction and are not affected. An idle timeout
-- already in force is kept: the trigger's WHEN tests that in C, so only the first active task a
-- transaction changes runs this function (a batch claim or completion pays it once, not per row).
-- The setting holds at most 2147483647 ms (about 24.8 days): a longer threshold is capped there,
-- as setting more would raise and make the role's tasks impossible to claim.
DECLARE
    c_max_timeout_ms constant numeric := 2147483647;
    v_threshold      interval;
BEGIN
    SELECT r.stale_threshold INTO v_threshold FROM task_roles r WHERE r.role = NEW.role;
    IF v_threshold IS NOT NULL THEN
        PERFORM set_config('idle_in_transaction_session_timeout',
                           least(ceil(extract(epoch FROM v_threshold) * 1000), c_max_timeout_ms)::bigint::text, true);
    END IF;
    RETURN NEW;
END;
$$;
REVOKE ALL ON FUNCTION tg_worker_tasks__limit_idle_transaction() FROM PUBLIC;

-- tg_worker_tasks__record_attempt
-- Keeps the attempt a task leaves without completing (worker, times, outcome, error) in worker_task_attempts.
CREATE FUNCTION tg_worker_tasks__record_attempt()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO worker_task_attempts (
        task_id, attempt, worker_id, claimed_at, started_at, last_heartbeat_at, ended_at,
        outcome, error_message)
    VALUES (
        OLD.id, OLD.attempt, OLD.worker_id, OLD.claimed_at, OLD.started_at, OLD.last_heartbeat_at,
        taskpool_now(),
        CASE
            WHEN NEW.status <> 'pending' THEN NEW.status
            WHEN NEW.retry_count > OLD.retry_count THEN 'retried'
            ELSE 'released'
        END,
        NEW.error_message);
    RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION tg_worker_tasks__record_attempt() FROM PUBLIC;

-- tg_worker_tasks__chain_follow_ups
-- Queues the follow-ups task_role_chains names for a task that just completed, in the same
-- transaction; a link to a store deleted while the task ran is skipped.
CREATE FUNCTION tg_worker_tasks__chain_follow_ups()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    v_specs          jsonb;
    -- Every store id up to this one was handed out once: one of them that is missing now was a
    -- store, deleted since. An id past it never was a store.
    v_last_store_id  bigint := coalesce(pg_sequence_last_value(pg_get_serial_sequence('dispensaries', 'id')), 0);
    v_store_required boolean;
BEGIN
    SELECT r.requires_store INTO v_store_required FROM task_roles r WHERE r.role = NEW.role;

    SELECT jsonb_agg(follow_up.spec ORDER BY follow_up.n) INTO v_specs
    FROM (
        -- a store id list fans out: one task per store, none for a store deleted since
        SELECT jsonb_build_object('role', c.to_role, 'dispensary_id', store.id) AS spec, store.n
        FROM task_role_chains c
        CROSS JOIN LATERAL jsonb_array_elements(NEW.result -> c.result_key) WITH ORDINALITY AS store(id, n)
        WHERE c.from_role = NEW.role AND c.per_store_ids
          AND jsonb_typeof(NEW.result -> c.result_key) = 'array'
          AND NOT coalesce(_jsonb_integer(store.id) BETWEEN 1 AND v_last_store_id
                           AND NOT EXISTS (SELECT FROM dispensaries d WHERE d.id = _jsonb_integer(store.id)),
                           false)
        UNION ALL
        -- a value hands on: one task for the same store, carrying it. A task of a role that
        -- requires a store has none only when its store was deleted while it ran (the foreign key
        -- cleared dispensary_id): there is no store to hand on to.
        SELECT jsonb_build_object('role', c.to_role, 'dispensary_id', NEW.dispensary_id,
                                  'payload', jsonb_build_object(c.result_key, NEW.result -> c.result_key)), 0
        FROM task_role_chains c
        WHERE c.from_role = NEW.role AND NOT c.per_store_ids
          AND NEW.result ? c.result_key
          AND NOT (v_store_required AND NEW.dispensary_id IS NULL)
    ) AS follow_up;

    IF v_specs IS NOT NULL THEN
        -- Through the enqueue checks: a bad link (say, a store id that never existed) fails the
        -- completion itself, so no chain is ever half made.
        PERFORM FROM _enqueue_specs(v_specs, format('task %s chained', NEW.id));
    END IF;
    RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION tg_worker_tasks__chain_follow_ups() FROM PUBLIC;

-- tg_worker_tasks__notify_requeued
-- Wakes one waiting worker of the role when a task goes back to pending, ready now.
CREATE FUNCTION tg_worker_tasks__notify_requeued()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.scheduled_for <= taskpool_now() THEN
        PERFORM _wake_waiting_workers(NEW.role, 1);
    END IF;
    RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION tg_worker_tasks__notify_requeued() FROM PUBLIC;

-- tg_worker_tasks__wake_for_freed_store
-- Wakes one waiting worker for the next ready task of a store whose claimed or running task ended.
CREATE FUNCTION tg_worker_tasks__wake_for_freed_store()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- A task held back only by per-store exclusion woke nobody when its store freed up: a worker of
-- its role had found nothing to claim and slept its whole poll interval. A task that goes back
-- to pending ready now wakes a worker of its own role (_900_notify_requeued); this wakes one for
-- the store's best other ready task, whatever its role.
DECLARE
    v_role text;
BEGIN
    SELECT t.role INTO v_role
    FROM worker_tasks t
    WHERE t.dispensary_id = NEW.dispensary_id
      AND t.status = 'pending'
      AND t.dispensary_id IS NOT NULL
      AND t.scheduled_for <= taskpool_now()
      AND t.id <> NEW.id
    ORDER BY t.priority DESC, t.created_at, t.id
    LIMIT 1;
    IF FOUND THEN
        PERFORM _wake_waiting_workers(v_role, 1);
    END IF;
    RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION tg_worker_tasks__wake_for_freed_store() FROM PUBLIC;

COMMIT;
