-- Revert taskpool:prune_tasks from pg

BEGIN;
SET client_min_messages = 'warning';

-- Back to the v0.4.0 body, which computed its cutoff itself.

-- prune_tasks
-- Deletes finished tasks (and their attempt history) that finished longer ago than older_than; returns how many.
CREATE OR REPLACE FUNCTION prune_tasks(older_than interval, max_tasks integer DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT prune_tasks(interval '7 days');
--   SELECT prune_tasks(interval '1 day', max_tasks := 10000);   -- oldest first, in bounded bites
-- Only completed, failed and cancelled tasks go; pending, claimed and running ones never do.
-- An age reaching back past the earliest timestamp (4713 BC) prunes nothing.
DECLARE
    v_cutoff timestamptz;
    v_count  integer;
BEGIN
    IF prune_tasks.older_than IS NULL OR prune_tasks.older_than < interval '0' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('older_than must be a non-negative interval, not %s', coalesce(prune_tasks.older_than::text, 'NULL'));
    END IF;
    IF prune_tasks.max_tasks <= 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_tasks must be positive, not %s', prune_tasks.max_tasks),
            HINT = 'Omit it to prune every task old enough.';
    END IF;
    BEGIN
        v_cutoff := taskpool_now() - prune_tasks.older_than;
    EXCEPTION WHEN datetime_field_overflow THEN
        -- No task finished before the earliest time a timestamp can hold.
        RETURN 0;
    END;

    WITH
    -- finished long enough ago, oldest first
    doomed AS (
        SELECT t.id
        FROM worker_tasks t
        WHERE t.status IN ('completed', 'failed', 'cancelled')
          AND t.completed_at < v_cutoff
        ORDER BY t.completed_at
        LIMIT prune_tasks.max_tasks
        FOR UPDATE SKIP LOCKED
    ),
    pruned AS (
        DELETE FROM worker_tasks t USING doomed d WHERE t.id = d.id RETURNING t.id
    )
    SELECT count(*) INTO v_count FROM pruned;
    RETURN v_count;
END;
$$;

REVOKE ALL ON FUNCTION prune_tasks(interval, integer) FROM PUBLIC;

COMMIT;
