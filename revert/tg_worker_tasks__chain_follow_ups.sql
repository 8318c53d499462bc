-- Revert taskpool:tg_worker_tasks__chain_follow_ups from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.3.0 body, which refused a completion chaining to a deleted store.
-- tg_worker_tasks__chain_follow_ups
-- Queues the follow-ups task_role_chains names for a task that just completed, in the same transaction.
CREATE OR REPLACE FUNCTION tg_worker_tasks__chain_follow_ups()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    v_specs jsonb;
BEGIN
    SELECT jsonb_agg(follow_up.spec ORDER BY follow_up.n) INTO v_specs
    FROM (
        -- a store id list fans out: one task per store
        SELECT jsonb_build_object('role', c.to_role, 'dispensary_id', store.id) AS spec, store.n
        FROM task_role_chains c
        CROSS JOIN LATERAL jsonb_array_elements(NEW.result -> c.result_key) WITH ORDINALITY AS store(id, n)
        WHERE c.from_role = NEW.role AND c.per_store_ids
          AND jsonb_typeof(NEW.result -> c.result_key) = 'array'
        UNION ALL
        -- a value hands on: one task for the same store, carrying it
        SELECT jsonb_build_object('role', c.to_role, 'dispensary_id', NEW.dispensary_id,
                                  'payload', jsonb_build_object(c.result_key, NEW.result -> c.result_key)), 0
        FROM task_role_chains c
        WHERE c.from_role = NEW.role AND NOT c.per_store_ids
          AND NEW.result ? c.result_key
    ) AS follow_up;

    IF v_specs IS NOT NULL THEN
        -- Through the enqueue checks: a bad link (say, a store id that does not exist) fails the
        -- completion itself, so no chain is ever half made.
        PERFORM FROM _enqueue_specs(v_specs, format('task %s chained', NEW.id));
    END IF;
    RETURN NULL;
END;
$$;

COMMIT;
