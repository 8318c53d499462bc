-- Deploy taskpool:move_tasks_to_history to pg
-- requires: worker_task_history
-- requires: task_history_settings
-- requires: _create_task_history_partitions
-- requires: task_metric_totals
-- requires: task_spec_hash
-- requires: worker_tasks_dedupe_window

BEGIN;
SET client_min_messages = 'warning';

-- move_tasks_to_history
-- Moves finished tasks, with their attempts, from worker_tasks to worker_task_history: up to max_batches batches of task_history_settings.batch_size, a statement each; returns how many moved.
CREATE FUNCTION move_tasks_to_history(max_batches integer DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT move_tasks_to_history();       -- what the tick does: up to max_batches batches
--   SELECT move_tasks_to_history(1000);   -- catch up after an upgrade
-- tick_schedules() calls it, so worker_tasks keeps live work and the tasks finished in the last
-- history_after (5 minutes by default); everything older is in the history, which
-- worker_tasks_with_history reads beside it. A task moves once
--   * it finished before now - history_after,
--   * and before the metrics' watermark (task_metric_watermark), so that the fold never needs
--     the history and the history is immutable to the metrics,
--   * and its dedupe window (dedupe_window) is over: worker_tasks_one_per_dedupe_period_idx,
--     on worker_tasks alone, keeps refusing a second task of the key within the window.
-- Oldest first; rows another transaction holds are skipped, never waited for. Each batch locks
-- its tasks, creates the days it needs, then moves the tasks, their attempts and the history's
-- counts in one statement. The move is not published on the task-change stream as a deletion.
DECLARE
    v_settings task_history_settings;
    v_now      timestamptz := taskpool_now();
    v_before   timestamptz;
    v_ids      bigint[];
    v_days     date[];
    v_batch    integer;
    v_total    bigint := 0;
BEGIN
    SELECT s.* INTO v_settings FROM task_history_settings s;
    IF move_tasks_to_history.max_batches < 1 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_batches must be positive, not %s', move_tasks_to_history.max_batches),
            HINT = 'Omit it for task_history_settings.max_batches.';
    END IF;
    v_before := least(v_now - v_settings.history_after, (SELECT w.folded_before FROM task_metric_watermark w));

    FOR i IN 1 .. coalesce(move_tasks_to_history.max_batches, v_settings.max_batches) LOOP
        SELECT array_agg(d.id), array_agg(DISTINCT (d.completed_at AT TIME ZONE 'UTC')::date)
        INTO v_ids, v_days
        FROM (SELECT t.id, t.completed_at
              FROM worker_tasks t
              WHERE t.status IN ('completed', 'failed', 'cancelled')
                AND t.completed_at < v_before
                AND (t.dedupe_window IS NULL
                     OR _dedupe_period_start(t.created_at, t.dedupe_window) + t.dedupe_window <= v_now)
              ORDER BY t.completed_at
              LIMIT v_settings.batch_size
              FOR UPDATE SKIP LOCKED) d;
        EXIT WHEN v_ids IS NULL;

        PERFORM _create_task_history_partitions(v_days);
        PERFORM set_config('taskpool.moving_tasks_to_history', 'on', true);
        WITH
        moved AS (
            DELETE FROM worker_tasks t
            WHERE t.id = ANY (v_ids)
            RETURNING t.*
        ),
        moved_attempts AS (
            DELETE FROM worker_task_attempts a
            USING moved m
            WHERE a.task_id = m.id
            RETURNING a.*, m.completed_at AS task_completed_at, m.status AS task_status
        ),
        kept_attempts AS (
            INSERT INTO worker_task_attempt_history
            SELECT a.task_id, a.attempt, a.worker_id, a.claimed_at, a.started_at, a.last_heartbeat_at,
                   a.ended_at, a.outcome, a.error_message, a.error_details, a.claim_token, a.error_data,
                   a.task_completed_at, a.task_status
            FROM moved_attempts a
        ),
        kept AS (
            INSERT INTO worker_task_history
            SELECT m.id, m.role, m.dispensary_id, m.platform, m.status, m.priority, m.scheduled_for, m.payload,
                   m.dedupe_key, m.worker_id, m.attempt, m.claimed_at, m.started_at, m.last_heartbeat_at,
                   m.cancel_requested_at, m.completed_at, m.result, m.error_message, m.retry_count,
                   m.max_retries, m.created_at, m.updated_at, m.claim_token, m.backoff_base, m.backoff_cap,
                   m.parent_id, m.headers, m.waited, m.dedupe_window,
                   task_spec_hash(m.role, m.dispensary_id, m.payload)
            FROM moved m
        ),
        counted AS (
            INSERT INTO task_history_counts AS c (day, status, role, tasks)
            SELECT (m.completed_at AT TIME ZONE 'UTC')::date, m.status, m.role, count(*)
            FROM moved m
            GROUP BY 1, 2, 3
            ON CONFLICT (day, status, role) DO UPDATE SET tasks = c.tasks + excluded.tasks
        )
        SELECT count(*) INTO v_batch FROM moved;
        PERFORM set_config('taskpool.moving_tasks_to_history', '', true);

        v_total := v_total + v_batch;
        EXIT WHEN cardinality(v_ids) < v_settings.batch_size;
    END LOOP;
    RETURN v_total;
END;
$$;

REVOKE ALL ON FUNCTION move_tasks_to_history(integer) FROM PUBLIC;

COMMENT ON FUNCTION move_tasks_to_history(integer) IS $$Moves finished tasks, with their attempts, from worker_tasks to worker_task_history: up to max_batches batches of task_history_settings.batch_size, a statement each; returns how many moved. The tick calls it.
Example:
  SELECT move_tasks_to_history();$$;

COMMIT;
