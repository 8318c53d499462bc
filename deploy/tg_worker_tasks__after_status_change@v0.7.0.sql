-- Deploy taskpool:tg_worker_tasks__after_status_change to pg
-- requires: tg_worker_tasks__record_attempt
-- requires: tg_worker_tasks__chain_follow_ups
-- requires: tg_worker_tasks__notify_requeued
-- requires: tg_worker_tasks__wake_for_freed_store

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__after_status_change
-- The one AFTER ROW trigger of worker_tasks: what follows a status change, in the order the four
-- triggers it replaces ran (_600_record_attempt, _700_chain_follow_ups, _900_notify_requeued,
-- _900_wake_for_freed_store): an attempt that ends is recorded, a completion chains its
-- follow-ups, a task back in the pool wakes a worker, and a store freed wakes one for its next
-- ready task.
--
-- Why one: PostgreSQL parses a row trigger's WHEN clause from its stored text at the first row
-- of every statement that sets the columns it watches, and every claim and completion sets
-- status. The four clauses were about 5.6 kB of node text; measured on one backend looping
-- claim_and_start_tasks + complete_task, disabling the four triggers cut 35 us from the claim and
-- 28 us from the completion (of about 180 us a cycle), and this one trigger with one shorter
-- clause keeps most of that. Its WHEN admits every change that any of the four acted on (and a
-- few they ignored, which cost a call here and change nothing); a completion of a task without a
-- store and without a JSON-object result, the common case, never calls it.
CREATE FUNCTION tg_worker_tasks__after_status_change()
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
BEGIN
    -- An attempt ended: keep it in worker_task_attempts (the task row keeps only the current one).
    IF OLD.status IN ('claimed', 'running') AND NEW.status IN ('pending', 'failed', 'cancelled') THEN
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
            PERFORM FROM _enqueue_specs(v_specs, format('task %s chained', NEW.id));
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
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION tg_worker_tasks__after_status_change() FROM PUBLIC;

DROP TRIGGER _600_record_attempt ON worker_tasks;
DROP TRIGGER _700_chain_follow_ups ON worker_tasks;
DROP TRIGGER _900_notify_requeued ON worker_tasks;
DROP TRIGGER _900_wake_for_freed_store ON worker_tasks;

CREATE TRIGGER _600_after_status_change
    AFTER UPDATE OF status ON worker_tasks
    FOR EACH ROW
    WHEN (NEW.status IN ('pending', 'failed', 'cancelled')
          OR (NEW.status = 'completed' AND (NEW.dispensary_id IS NOT NULL OR jsonb_typeof(NEW.result) = 'object')))
    EXECUTE FUNCTION tg_worker_tasks__after_status_change();

COMMIT;
