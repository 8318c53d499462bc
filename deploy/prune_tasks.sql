-- Deploy taskpool:prune_tasks to pg
-- requires: prune_tasks@v0.5.0
-- requires: task_metric_totals
-- requires: _prune_finished_tasks

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
-- What it deletes leaves the counters of taskpool_metrics() as they were: it deletes through
-- _prune_finished_tasks, as the task retention policies do, which adds to task_metric_totals
-- what the tick has not folded yet, and every completed task to pruned_completed.
DECLARE
    v_cutoff timestamptz := _prune_cutoff(prune_tasks.older_than);
BEGIN
    IF prune_tasks.max_tasks <= 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_tasks must be positive, not %s', prune_tasks.max_tasks),
            HINT = 'Omit it to prune every task old enough.';
    END IF;

    RETURN _prune_finished_tasks(ARRAY['completed', 'failed', 'cancelled'], v_cutoff, prune_tasks.max_tasks);
END;
$$;

REVOKE ALL ON FUNCTION prune_tasks(interval, integer) FROM PUBLIC;

COMMIT;
