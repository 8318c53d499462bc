-- Deploy taskpool:prune_tasks to pg
-- requires: prune_tasks@v0.5.0
-- requires: task_metric_totals

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
-- What it deletes leaves the counters of taskpool_metrics() as they were: the completed tasks
-- and failed attempts the tick has not folded into task_metric_totals yet (newer than the
-- watermark) are added to it here, in the same transaction, and every completed task it
-- deletes is added to pruned_completed. The watermark is read FOR SHARE: a fold running now
-- finishes first, and none starts until this prune commits.
DECLARE
    v_cutoff timestamptz := _prune_cutoff(prune_tasks.older_than);
    v_count  integer;
    v_folded timestamptz;
BEGIN
    IF prune_tasks.max_tasks <= 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_tasks must be positive, not %s', prune_tasks.max_tasks),
            HINT = 'Omit it to prune every task old enough.';
    END IF;

    SELECT w.folded_before INTO v_folded FROM task_metric_watermark w FOR SHARE;

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
    -- their failed attempts not folded yet (the cascade deletes them; this reads them before)
    unfolded_attempts AS (
        SELECT a.task_id, 'attempts_' || a.outcome AS counter
        FROM worker_task_attempts a
        JOIN doomed d ON d.id = a.task_id
        WHERE a.outcome IN ('retried', 'failed') AND a.ended_at >= v_folded
    ),
    pruned AS (
        DELETE FROM worker_tasks t USING doomed d WHERE t.id = d.id
        RETURNING t.id, t.role, t.status, t.completed_at
    ),
    counted AS (
        SELECT p.role, 'pruned_completed' AS counter FROM pruned p WHERE p.status = 'completed'
        UNION ALL
        SELECT p.role, 'completed' FROM pruned p WHERE p.status = 'completed' AND p.completed_at >= v_folded
        UNION ALL
        SELECT p.role, u.counter FROM unfolded_attempts u JOIN pruned p ON p.id = u.task_id
    ),
    totalled AS (
        INSERT INTO task_metric_totals AS m (role, counter, total)
        SELECT c.role, c.counter, count(*) FROM counted c GROUP BY c.role, c.counter
        ON CONFLICT (role, counter) DO UPDATE SET total = m.total + excluded.total
    )
    SELECT count(*) INTO v_count FROM pruned;
    RETURN v_count;
END;
$$;

REVOKE ALL ON FUNCTION prune_tasks(interval, integer) FROM PUBLIC;

COMMIT;
