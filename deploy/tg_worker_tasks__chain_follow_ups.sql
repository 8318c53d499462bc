-- Deploy taskpool:tg_worker_tasks__chain_follow_ups to pg
-- requires: task_role_chains
-- requires: _enqueue_specs
-- requires: _jsonb_integer

BEGIN;
SET client_min_messages = 'warning';

-- tg_worker_tasks__chain_follow_ups
-- Queues the follow-ups task_role_chains names for a task that just completed, in the same
-- transaction; a link to a store deleted while the task ran is skipped.
CREATE OR REPLACE FUNCTION tg_worker_tasks__chain_follow_ups()
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

COMMIT;
