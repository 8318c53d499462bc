-- Deploy taskpool:count_prunable_tasks to pg
-- requires: count_prunable_tasks@v0.8.0
-- requires: _count_prunable_finished_tasks

BEGIN;
SET client_min_messages = 'warning';

-- count_prunable_tasks
-- Counts the finished tasks prune_tasks(older_than) would delete now, deleting nothing: a prune's dry run.
CREATE OR REPLACE FUNCTION count_prunable_tasks(older_than interval)
RETURNS bigint
LANGUAGE plpgsql
STABLE
AS $$
-- Example:
--   SELECT count_prunable_tasks(interval '7 days');
-- A bad older_than is refused as prune_tasks refuses it, even when there is nothing to count.
DECLARE
    v_cutoff timestamptz := _prune_cutoff(count_prunable_tasks.older_than);
BEGIN
    RETURN _count_prunable_finished_tasks(ARRAY['completed', 'failed', 'cancelled'], v_cutoff);
END;
$$;

REVOKE ALL ON FUNCTION count_prunable_tasks(interval) FROM PUBLIC;

COMMIT;
