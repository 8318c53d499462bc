-- Deploy taskpool_crawler:_prune_policy_resync_plan_entries to pg
-- requires: resync_plan_entries
-- requires: crawler_retention

BEGIN;
SET client_min_messages = 'warning';

-- _prune_policy_resync_plan_entries
-- The resync_plan_entries policy's pruner: the plan entries of days older than the policy's keep, oldest day first.
CREATE FUNCTION _prune_policy_resync_plan_entries(policy retention_policies, max_rows integer, dry_run boolean)
RETURNS bigint
LANGUAGE plpgsql
AS $$
-- An entry makes planning its day twice harmless; nobody plans a day a month gone, so the
-- entries of such days only grow the table, a row per store a day (24,000 stores: 8.8 million
-- rows a year). The day is the store's local plan day: the cutoff is a day earlier than keep
-- says, so that no time zone's today is ever pruned.
DECLARE
    v_before date := (taskpool_now() - policy.keep)::date - 1;
    v_count  bigint;
BEGIN
    IF dry_run THEN
        RETURN (SELECT count(*) FROM resync_plan_entries e WHERE e.day < v_before);
    END IF;
    WITH doomed AS (
        SELECT e.day, e.dispensary_id
        FROM resync_plan_entries e
        WHERE e.day < v_before
        ORDER BY e.day, e.dispensary_id
        LIMIT max_rows
        FOR UPDATE SKIP LOCKED
    ),
    gone AS (
        DELETE FROM resync_plan_entries e USING doomed d
        WHERE e.day = d.day AND e.dispensary_id = d.dispensary_id
        RETURNING 1
    )
    SELECT count(*) INTO v_count FROM gone;
    RETURN v_count;
END;
$$;

REVOKE ALL ON FUNCTION _prune_policy_resync_plan_entries(retention_policies, integer, boolean) FROM PUBLIC;

INSERT INTO retention_policies (name, pruner, keep, batch_size, description) VALUES
    ('resync_plan_entries', '_prune_policy_resync_plan_entries', interval '30 days', 5000,
     'the resync plan''s entries (which store got its crawl on which day), by day')
ON CONFLICT (name) DO NOTHING;

COMMIT;
