-- Deploy taskpool:retention_core_pruners to pg
-- requires: retention_policies
-- requires: _prune_finished_tasks
-- requires: worker_task_attempts_ended_at_idx
-- requires: task_workers

BEGIN;
SET client_min_messages = 'warning';

-- The pruners of the core's retention policies. Each is pruner(policy, max_rows, dry_run), as
-- retention_policies.pruner says: it deletes up to max_rows rows older than policy.keep, oldest
-- first, skipping the rows another transaction holds, and returns how many; with dry_run it
-- counts every row it would delete and deletes nothing.

-- _prune_policy_tasks
-- Prunes the finished tasks of the policy's statuses older than its keep, with their attempt history (completed_tasks, failed_tasks).
CREATE FUNCTION _prune_policy_tasks(policy retention_policies, max_rows integer, dry_run boolean)
RETURNS bigint
LANGUAGE plpgsql
AS $$
-- Through _prune_finished_tasks, as prune_tasks: the metrics' counters survive.
DECLARE
    v_cutoff timestamptz := taskpool_now() - policy.keep;
BEGIN
    IF policy.statuses IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('retention policy %s prunes tasks but names no statuses', policy.name),
            HINT = 'set_retention_policy(name, statuses := ARRAY[''completed''])';
    END IF;
    IF dry_run THEN
        RETURN (SELECT count(*) FROM worker_tasks t
                WHERE t.status IN ('completed', 'failed', 'cancelled')
                  AND t.status = ANY (policy.statuses)
                  AND t.completed_at < v_cutoff);
    END IF;
    RETURN _prune_finished_tasks(policy.statuses, v_cutoff, max_rows);
END;
$$;

-- _prune_policy_attempts
-- Prunes the attempt history of tasks still kept, by the attempt's own age (task_attempts).
CREATE FUNCTION _prune_policy_attempts(policy retention_policies, max_rows integer, dry_run boolean)
RETURNS bigint
LANGUAGE plpgsql
AS $$
-- Only attempts the metrics have folded already (ended before the watermark) go, so the
-- counters of failed attempts survive as they do a prune of their task.
DECLARE
    v_before timestamptz := least(taskpool_now() - policy.keep,
                                  (SELECT w.folded_before FROM task_metric_watermark w));
    v_count  bigint;
BEGIN
    IF dry_run THEN
        RETURN (SELECT count(*) FROM worker_task_attempts a WHERE a.ended_at < v_before);
    END IF;
    WITH doomed AS (
        SELECT a.task_id, a.attempt
        FROM worker_task_attempts a
        WHERE a.ended_at < v_before
        ORDER BY a.ended_at
        LIMIT max_rows
        FOR UPDATE SKIP LOCKED
    ),
    gone AS (
        DELETE FROM worker_task_attempts a USING doomed d
        WHERE (a.task_id, a.attempt) = (d.task_id, d.attempt)
        RETURNING 1
    )
    SELECT count(*) INTO v_count FROM gone;
    RETURN v_count;
END;
$$;

-- _prune_policy_workers
-- Prunes the registry rows of workers not heard from for longer than the policy's keep (silent_workers).
CREATE FUNCTION _prune_policy_workers(policy retention_policies, max_rows integer, dry_run boolean)
RETURNS bigint
LANGUAGE plpgsql
AS $$
-- A worker that stops cleanly deregisters; one killed stays in v_workers as silent until this.
-- Its roles and waits go with it (ON DELETE CASCADE), as with deregister_worker; the tasks it
-- held are stale recovery's, which the tick runs first.
DECLARE
    v_cutoff timestamptz := taskpool_now() - policy.keep;
    v_count  bigint;
BEGIN
    IF dry_run THEN
        RETURN (SELECT count(*) FROM task_workers w WHERE w.last_seen_at < v_cutoff);
    END IF;
    WITH doomed AS (
        SELECT w.worker_id
        FROM task_workers w
        WHERE w.last_seen_at < v_cutoff
        ORDER BY w.last_seen_at
        LIMIT max_rows
        FOR UPDATE SKIP LOCKED
    ),
    gone AS (
        DELETE FROM task_workers w USING doomed d WHERE w.worker_id = d.worker_id RETURNING 1
    )
    SELECT count(*) INTO v_count FROM gone;
    RETURN v_count;
END;
$$;

REVOKE ALL ON FUNCTION _prune_policy_tasks(retention_policies, integer, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION _prune_policy_attempts(retention_policies, integer, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION _prune_policy_workers(retention_policies, integer, boolean) FROM PUBLIC;

COMMIT;
