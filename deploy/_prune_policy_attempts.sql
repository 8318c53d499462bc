-- Deploy taskpool:_prune_policy_attempts to pg
-- requires: _prune_policy_attempts@v0.8.0
-- requires: worker_task_history
-- requires: _task_history_cutoff

BEGIN;
SET client_min_messages = 'warning';

-- _prune_policy_attempts
-- Prunes the attempt history of tasks still kept, by the attempt's own age (task_attempts).
CREATE OR REPLACE FUNCTION _prune_policy_attempts(policy retention_policies, max_rows integer, dry_run boolean)
RETURNS bigint
LANGUAGE plpgsql
AS $$
-- Only attempts the metrics have folded already (ended before the watermark) go, so the
-- counters of failed attempts survive as they do a prune of their task.
DECLARE
    v_before timestamptz := least(taskpool_now() - policy.keep,
                                  (SELECT w.folded_before FROM task_metric_watermark w));
    v_count  bigint;
    v_history bigint;
BEGIN
    IF dry_run THEN
        RETURN (SELECT count(*) FROM worker_task_attempts a WHERE a.ended_at < v_before)
             + (SELECT count(*) FROM worker_task_attempt_history a WHERE a.ended_at < _task_history_cutoff(v_before));
    END IF;
    -- the history's attempts mostly go with their task's leaf (_drop_task_history_partitions);
    -- what is left is deleted here, by the day as the tasks are (_task_history_cutoff)
    WITH doomed AS (
        SELECT a.task_id, a.attempt, a.task_completed_at
        FROM worker_task_attempt_history a
        WHERE a.ended_at < _task_history_cutoff(v_before)
        LIMIT max_rows
        FOR UPDATE SKIP LOCKED
    ),
    gone AS (
        DELETE FROM worker_task_attempt_history a USING doomed d
        WHERE (a.task_id, a.attempt, a.task_completed_at) = (d.task_id, d.attempt, d.task_completed_at)
        RETURNING 1
    )
    SELECT count(*) INTO v_history FROM gone;
    WITH doomed AS (
        SELECT a.task_id, a.attempt
        FROM worker_task_attempts a
        WHERE a.ended_at < v_before
        ORDER BY a.ended_at
        LIMIT max_rows - v_history
        FOR UPDATE SKIP LOCKED
    ),
    gone AS (
        DELETE FROM worker_task_attempts a USING doomed d
        WHERE (a.task_id, a.attempt) = (d.task_id, d.attempt)
        RETURNING 1
    )
    SELECT count(*) INTO v_count FROM gone;
    RETURN v_history + v_count;
END;
$$;

COMMIT;
