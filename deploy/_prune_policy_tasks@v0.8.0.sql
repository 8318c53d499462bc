-- Deploy taskpool:_prune_policy_tasks to pg
-- requires: retention_core_pruners

-- _prune_policy_tasks's home: its live body, unchanged from retention_core_pruners.
-- Change _prune_policy_tasks here, with `sqitch rework _prune_policy_tasks`.

BEGIN;
SET client_min_messages = 'warning';

-- _prune_policy_tasks
-- Prunes the finished tasks of the policy's statuses older than its keep, with their attempt history (completed_tasks, failed_tasks).
CREATE OR REPLACE FUNCTION _prune_policy_tasks(policy retention_policies, max_rows integer, dry_run boolean)
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

COMMIT;
