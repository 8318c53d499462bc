-- Deploy taskpool:tg_worker_tasks__after_status_change to pg
-- requires: tg_worker_tasks__after_status_change@v0.7.0
-- requires: after_status_change_parents_and_waiters

-- tg_worker_tasks__after_status_change's home: its live body, unchanged from after_status_change_parents_and_waiters.
-- Change tg_worker_tasks__after_status_change here, with `sqitch rework tg_worker_tasks__after_status_change`.

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__after_status_change, two more things after a status change:
-- - a chain's follow-ups (task_role_chains) remember the task that queued them (parent_id);
-- - a task that finishes (completed, failed, cancelled) notifies the sessions that wait for it
--   (task_result_waits), and only those: the trigger's WHEN passes a completion on to this
--   function only for a task with a store, an object result (as before) or waited set, so the
--   completion of a task nobody waits for costs what it cost before, and sends no NOTIFY
--   (NOTIFY serializes the commits of every notifying transaction).
-- The body is the change tg_worker_tasks__after_status_change's, with those two additions, and
-- the attempt it records keeps its claim_token.
CREATE OR REPLACE FUNCTION tg_worker_tasks__after_status_change()
RETURNS trigger
LANGUAGE plpgsql
-- The wake-ups need _wake_waiting_workers, which only the owner may run. Only the owner, and the
-- owner's SECURITY DEFINER functions, may update worker_tasks: no caller gains anything.
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_specs          jsonb;
    v_last_store_id  bigint;
    v_store_required boolean;
    v_role           text;
    v_notified       integer;
BEGIN
    -- An attempt ended: keep it in worker_task_attempts (the task row keeps only the current one).
    IF OLD.status IN ('claimed', 'running') AND NEW.status IN ('pending', 'failed', 'cancelled') THEN
        INSERT INTO worker_task_attempts (
            task_id, attempt, claim_token, worker_id, claimed_at, started_at, last_heartbeat_at,
            ended_at, outcome, error_message)
        VALUES (
            OLD.id, OLD.attempt, OLD.claim_token, OLD.worker_id, OLD.claimed_at, OLD.started_at,
            OLD.last_heartbeat_at, taskpool_now(),
            CASE
                WHEN NEW.status <> 'pending' THEN NEW.status
                WHEN NEW.retry_count > OLD.retry_count THEN 'retried'
                ELSE 'released'
            END,
            NEW.error_message);
    END IF;

    -- A completion with a JSON-object result chains the follow-ups task_role_chains names.
    IF NEW.status = 'completed' AND OLD.status <> 'completed' AND jsonb_typeof(NEW.result) = 'object' THEN
        -- Every store id up to this one was handed out once: one of them that is missing now was
        -- a store, deleted since. An id past it never was a store.
        v_last_store_id := coalesce(pg_sequence_last_value(pg_get_serial_sequence('dispensaries', 'id')), 0);
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
            -- requires a store has none only when its store was deleted while it ran (the foreign
            -- key cleared dispensary_id): there is no store to hand on to.
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
            -- The follow-ups remember this task as their parent (task_chain).
            PERFORM FROM _enqueue_specs(v_specs, format('task %s chained', NEW.id), NEW.id);
        END IF;
    END IF;

    -- Back in the pool and ready now: wake a waiting worker of its role.
    IF NEW.status = 'pending' AND OLD.status <> 'pending' AND NEW.scheduled_for <= taskpool_now() THEN
        PERFORM _wake_waiting_workers(NEW.role, 1);
    END IF;

    -- A store freed: a task held back only by per-store exclusion woke nobody when its store freed
    -- up, so wake a worker for the store's best other ready task, whatever its role.
    IF OLD.status IN ('claimed', 'running') AND NEW.status NOT IN ('claimed', 'running')
       AND NEW.dispensary_id IS NOT NULL THEN
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
    END IF;
    -- Finished, and someone once waited for it (register_task_waits marked it): notify the
    -- sessions waiting now, each on its channel, and forget them. A task nobody waited for never
    -- gets here for this; NEW.waited is tested before any query.
    IF NEW.waited AND NEW.status IN ('completed', 'failed', 'cancelled') AND OLD.status <> NEW.status THEN
        WITH gone AS (
            DELETE FROM task_result_waits w
            WHERE w.task_id = NEW.id
            RETURNING w.backend_pid
        )
        SELECT count(pg_notify(task_wait_channel(gone.backend_pid), NEW.id::text)) INTO v_notified
        FROM gone;
    END IF;
    RETURN NULL;
END;
$$;

COMMIT;
