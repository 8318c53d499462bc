-- Deploy taskpool:_count_prunable_finished_tasks to pg
-- requires: _task_history_cutoff
-- requires: _drop_task_history_partitions

BEGIN;
SET client_min_messages = 'warning';

-- _count_prunable_finished_tasks
-- How many tasks of the given finished statuses _prune_finished_tasks would delete for cutoff, in worker_tasks and in the history: the dry run of prune_tasks and the task retention policies.
CREATE FUNCTION _count_prunable_finished_tasks(statuses text[], cutoff timestamptz)
RETURNS bigint
LANGUAGE plpgsql
STABLE
AS $$
-- The whole days of the history by their counts, the rest by rows.
DECLARE
    v_history_cutoff timestamptz := _task_history_cutoff(_count_prunable_finished_tasks.cutoff);
BEGIN
    RETURN _drop_task_history_partitions(_count_prunable_finished_tasks.statuses, v_history_cutoff, true)
         + (SELECT count(*) FROM worker_task_history h
            WHERE h.status = ANY (_count_prunable_finished_tasks.statuses)
              AND h.completed_at >= date_trunc('day', v_history_cutoff, 'UTC')
              AND h.completed_at < v_history_cutoff)
         + (SELECT count(*) FROM worker_tasks t
            WHERE t.status IN ('completed', 'failed', 'cancelled')
              AND t.status = ANY (_count_prunable_finished_tasks.statuses)
              AND t.completed_at < _count_prunable_finished_tasks.cutoff);
END;
$$;

REVOKE ALL ON FUNCTION _count_prunable_finished_tasks(text[], timestamptz) FROM PUBLIC;

COMMIT;
