-- Deploy taskpool:_prune_policy_workers to pg
-- requires: retention_core_pruners

-- _prune_policy_workers's home: its live body, unchanged from retention_core_pruners.
-- Change _prune_policy_workers here, with `sqitch rework _prune_policy_workers`.

BEGIN;
SET client_min_messages = 'warning';

-- _prune_policy_workers
-- Prunes the registry rows of workers not heard from for longer than the policy's keep (silent_workers).
CREATE OR REPLACE FUNCTION _prune_policy_workers(policy retention_policies, max_rows integer, dry_run boolean)
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

COMMIT;
