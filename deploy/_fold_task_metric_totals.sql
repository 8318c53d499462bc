-- Deploy taskpool:_fold_task_metric_totals to pg
-- requires: task_metric_totals
-- requires: worker_task_attempts_ended_at_idx

BEGIN;
SET client_min_messages = 'warning';

-- _fold_task_metric_totals
-- Adds the completed tasks and failed attempts that finished since the watermark, up to a safe point, to task_metric_totals; returns the new watermark.
CREATE FUNCTION _fold_task_metric_totals()
RETURNS timestamptz
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Called by tick_schedules. A scrape (taskpool_metrics) adds the totals to a count of the rows
-- newer than the watermark, so after a fold it reads about a tick's worth of rows, not the whole
-- history.
-- The safe point: a row is stamped with its transaction's start time (taskpool_now()) and seen
-- only once that transaction commits, so a fold up to now would miss the rows of transactions
-- still open. The watermark stops before the start of the oldest transaction open in this
-- database (pg_stat_activity, which this function's owner reads in full when it is a superuser
-- or a member of pg_read_all_stats), and a minute before now in any case. SECURITY DEFINER for
-- that view; its body touches nothing a caller names.
-- A fold that finds the watermark locked (another fold, or a prune reading it) does nothing:
-- the next tick folds.
DECLARE
    v_offset   interval := taskpool_now() - now();
    v_from     timestamptz;
    v_before   timestamptz;
BEGIN
    SELECT w.folded_before INTO v_from
    FROM task_metric_watermark w
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT least(taskpool_now() - interval '1 minute', min(a.xact_start) + v_offset) INTO v_before
    FROM pg_stat_activity a
    WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
      AND a.backend_type <> 'autovacuum worker';   -- vacuum writes no task
    IF v_before <= v_from THEN
        RETURN v_from;
    END IF;

    INSERT INTO task_metric_totals AS m (role, counter, total)
    SELECT t.role, 'completed', count(*)
    FROM worker_tasks t
    WHERE t.status = 'completed' AND t.completed_at >= v_from AND t.completed_at < v_before
    GROUP BY t.role
    ON CONFLICT (role, counter) DO UPDATE SET total = m.total + excluded.total;

    INSERT INTO task_metric_totals AS m (role, counter, total)
    SELECT t.role, 'attempts_' || a.outcome, count(*)
    FROM worker_task_attempts a
    JOIN worker_tasks t ON t.id = a.task_id
    WHERE a.outcome IN ('retried', 'failed') AND a.ended_at >= v_from AND a.ended_at < v_before
    GROUP BY t.role, a.outcome
    ON CONFLICT (role, counter) DO UPDATE SET total = m.total + excluded.total;

    UPDATE task_metric_watermark w SET folded_before = v_before WHERE w.singleton;
    RETURN v_before;
END;
$$;

REVOKE ALL ON FUNCTION _fold_task_metric_totals() FROM PUBLIC;

COMMIT;
