-- Deploy taskpool:_prune_finished_tasks to pg
-- requires: _prune_finished_tasks@v0.8.0
-- requires: _drop_task_history_partitions
-- requires: _task_history_cutoff

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
-- worker_task_history first: its whole UTC days before the cutoff are dropped a leaf at a time
-- (_drop_task_history_partitions; an age of a day or more stops at the start of the cutoff's
-- day, _task_history_cutoff), then its rows before a cutoff less than a day ago are deleted;
-- then worker_tasks as ever. max_tasks bounds the rows deleted, not the days dropped.
DECLARE
    v_count          integer;
    v_folded         timestamptz;
    v_history_cutoff timestamptz := _task_history_cutoff(_prune_finished_tasks.cutoff);
    v_dropped        bigint;
    v_deleted        integer;
BEGIN
    SELECT w.folded_before INTO v_folded FROM task_metric_watermark w FOR SHARE;
    IF _prune_finished_tasks.cutoff IS NULL THEN
        RETURN 0;
    END IF;

    v_dropped := _drop_task_history_partitions(_prune_finished_tasks.statuses, v_history_cutoff);
    -- every task in the history was folded before it moved: only pruned_completed counts it
    WITH
    doomed AS (
        SELECT h.id, h.completed_at
        FROM worker_task_history h
        WHERE h.status = ANY (_prune_finished_tasks.statuses)
          AND h.completed_at < v_history_cutoff
        ORDER BY h.completed_at
        LIMIT _prune_finished_tasks.max_tasks
        FOR UPDATE SKIP LOCKED
    ),
    gone AS (
        DELETE FROM worker_task_history h USING doomed d
        WHERE h.id = d.id AND h.completed_at = d.completed_at
        RETURNING h.id, h.role, h.status, h.completed_at
    ),
    gone_attempts AS (
        DELETE FROM worker_task_attempt_history a USING gone g
        WHERE a.task_id = g.id AND a.task_completed_at = g.completed_at
    ),
    uncounted AS (
        UPDATE task_history_counts c
        SET tasks = c.tasks - g.tasks
        FROM (SELECT (g.completed_at AT TIME ZONE 'UTC')::date AS day, g.status, g.role, count(*) AS tasks
              FROM gone g GROUP BY 1, 2, 3) g
        WHERE (c.day, c.status, c.role) = (g.day, g.status, g.role)
    ),
    totalled AS (
        INSERT INTO task_metric_totals AS m (role, counter, total)
        SELECT g.role, 'pruned_completed', count(*) FROM gone g WHERE g.status = 'completed' GROUP BY g.role
        ON CONFLICT (role, counter) DO UPDATE SET total = m.total + excluded.total
    )
    SELECT count(*) INTO v_deleted FROM gone;

    WITH
    -- finished long enough ago, oldest first (worker_tasks_finished_idx)
    doomed AS (
        SELECT t.id
        FROM worker_tasks t
        WHERE t.status IN ('completed', 'failed', 'cancelled')
          AND t.status = ANY (_prune_finished_tasks.statuses)
          AND t.completed_at < _prune_finished_tasks.cutoff
        ORDER BY t.completed_at
        LIMIT _prune_finished_tasks.max_tasks - v_deleted   -- NULL (all) stays NULL
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
    -- the follow-ups in worker_tasks lose their link, as the foreign key's ON DELETE SET NULL did
    orphaned AS (
        UPDATE worker_tasks c SET parent_id = NULL
        FROM pruned p
        WHERE c.parent_id = p.id AND c.id NOT IN (SELECT d.id FROM doomed d)
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
    RETURN v_dropped + v_deleted + v_count;
END;
$$;

REVOKE ALL ON FUNCTION _prune_finished_tasks(text[], timestamptz, integer) FROM PUBLIC;

COMMIT;
