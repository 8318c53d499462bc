-- Revert taskpool:delete_task from pg: back to the v0.8.0 body, which reads worker_tasks alone

BEGIN;
SET client_min_messages = 'warning';

-- delete_task
-- Deletes one task, whatever its status, with its attempt history; returns it as it was.
CREATE OR REPLACE FUNCTION delete_task(task_id bigint)
RETURNS worker_tasks
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT id, status FROM delete_task(42);
-- A claimed or running task's worker is told at once (abort:<id> on its wake channel) and its
-- calls for the task answer not_found. The tasks it queued keep their rows (parent_id cleared).
-- What the metrics' counters hold of it is kept, as prune_tasks keeps it: a completion or a
-- failed attempt the tick has not folded into task_metric_totals yet is added there, so no
-- counter goes down. An unknown id raises P0002.
DECLARE
    v_task   worker_tasks;
    v_folded timestamptz;
BEGIN
    IF delete_task.task_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'task_id is required';
    END IF;

    SELECT w.folded_before INTO v_folded FROM task_metric_watermark w FOR SHARE;
    SELECT t.* INTO v_task FROM worker_tasks t WHERE t.id = delete_task.task_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'P0002', MESSAGE = format('task %s does not exist', delete_task.task_id);
    END IF;

    INSERT INTO task_metric_totals AS m (role, counter, total)
    SELECT v_task.role, c.counter, count(*)
    FROM (SELECT 'attempts_' || a.outcome AS counter
          FROM worker_task_attempts a
          WHERE a.task_id = v_task.id AND a.outcome IN ('retried', 'failed') AND a.ended_at >= v_folded
          UNION ALL
          SELECT 'completed' WHERE v_task.status = 'completed' AND v_task.completed_at >= v_folded) c
    GROUP BY c.counter
    ON CONFLICT (role, counter) DO UPDATE SET total = m.total + excluded.total;

    DELETE FROM worker_tasks t WHERE t.id = v_task.id;

    IF v_task.status IN ('claimed', 'running') THEN
        PERFORM pg_notify(worker_wake_channel(v_task.worker_id), 'abort:' || v_task.id);
    END IF;
    RETURN v_task;
END;
$$;

REVOKE ALL ON FUNCTION delete_task(bigint) FROM PUBLIC;

COMMENT ON FUNCTION delete_task(bigint) IS $$Deletes one task, whatever its status, with its attempt history, and returns it as it was; a claimed or running task's worker is told to stop.
Example:
  SELECT id, status FROM delete_task(42);$$;

COMMIT;
