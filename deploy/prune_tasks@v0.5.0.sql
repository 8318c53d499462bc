-- Deploy taskpool:prune_tasks to pg
-- requires: prune_tasks@v0.4.0
-- requires: _prune_cutoff

BEGIN;
SET client_min_messages = 'warning';

-- prune_tasks
-- Deletes finished tasks (and their attempt history) that finished longer ago than older_than; returns how many.
CREATE OR REPLACE FUNCTION prune_tasks(older_than interval, max_tasks integer DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT prune_tasks(interval '7 days');
--   SELECT prune_tasks(interval '1 day', max_tasks := 10000);   -- oldest first, in bounded bites
--   CALL prune_tasks_in_batches(interval '7 days');            -- all of them, a transaction a batch
-- Only completed, failed and cancelled tasks go; pending, claimed and running ones never do.
-- An age reaching back past the earliest timestamp (4713 BC) prunes nothing.
-- count_prunable_tasks(older_than) counts them without deleting.
DECLARE
    v_cutoff timestamptz := _prune_cutoff(prune_tasks.older_than);
    v_count  integer;
BEGIN
    IF prune_tasks.max_tasks <= 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_tasks must be positive, not %s', prune_tasks.max_tasks),
            HINT = 'Omit it to prune every task old enough.';
    END IF;

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
