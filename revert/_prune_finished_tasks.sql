-- Revert taskpool:_prune_finished_tasks from pg: back to the v0.8.0 body, which reads worker_tasks alone

BEGIN;
SET client_min_messages = 'warning';

-- _prune_finished_tasks
-- Deletes up to max_tasks tasks of the given finished statuses that finished before cutoff, oldest first, with their attempt history, keeping the metrics' counters; returns how many.
CREATE OR REPLACE FUNCTION _prune_finished_tasks(statuses text[], cutoff timestamptz, max_tasks integer)
RETURNS integer
LANGUAGE plpgsql
AS $$
-- prune_tasks (every finished status) and the task retention policies (apply_retention, a status
-- and an age each) delete through here, so a task leaves the same way whoever prunes it.
-- What it deletes leaves the counters of taskpool_metrics() as they were: the completed tasks
-- and failed attempts the tick has not folded into task_metric_totals yet (newer than the
-- watermark) are added to it here, in the same transaction, and every completed task it
-- deletes is added to pruned_completed. The watermark is read FOR SHARE: a fold running now
-- finishes first, and none starts until this prune commits.
-- A NULL cutoff (an age past the earliest timestamp) prunes nothing; a NULL max_tasks, all.
-- Rows another transaction holds are skipped, never waited for.
DECLARE
    v_count  integer;
    v_folded timestamptz;
BEGIN
    SELECT w.folded_before INTO v_folded FROM task_metric_watermark w FOR SHARE;

    WITH
    -- finished long enough ago, oldest first (worker_tasks_finished_idx)
    doomed AS (
        SELECT t.id
        FROM worker_tasks t
        WHERE t.status IN ('completed', 'failed', 'cancelled')
          AND t.status = ANY (_prune_finished_tasks.statuses)
          AND t.completed_at < _prune_finished_tasks.cutoff
        ORDER BY t.completed_at
        LIMIT _prune_finished_tasks.max_tasks
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

REVOKE ALL ON FUNCTION _prune_finished_tasks(text[], timestamptz, integer) FROM PUBLIC;

COMMIT;
