-- Deploy taskpool:_prune_policy_platform_events to pg
-- requires: platform_events
-- requires: retention_policies

BEGIN;
SET client_min_messages = 'warning';

-- _prune_policy_platform_events
-- The platform_events policy's pruner: circuit-breaker events older than the policy's keep, oldest first.
CREATE FUNCTION _prune_policy_platform_events(policy retention_policies, max_rows integer, dry_run boolean)
RETURNS bigint
LANGUAGE plpgsql
AS $$
-- A platform whose circuit flaps writes two events a cooldown, for as long as it flaps: the
-- table grows with the fleet's bad days, not with its size. Each platform's newest event stays
-- whatever its age, so v_platforms and the dashboard still say when its circuit last moved.
DECLARE
    v_cutoff timestamptz := taskpool_now() - policy.keep;
    v_count  bigint;
BEGIN
    IF dry_run THEN
        RETURN (SELECT count(*) FROM platform_events e
                WHERE e.at < v_cutoff
                  AND EXISTS (SELECT FROM platform_events n
                              WHERE n.platform = e.platform AND (n.at, n.id) > (e.at, e.id)));
    END IF;
    WITH doomed AS (
        SELECT e.id
        FROM platform_events e
        WHERE e.at < v_cutoff
          AND EXISTS (SELECT FROM platform_events n
                      WHERE n.platform = e.platform AND (n.at, n.id) > (e.at, e.id))
        ORDER BY e.at
        LIMIT max_rows
        FOR UPDATE SKIP LOCKED
    ),
    gone AS (
        DELETE FROM platform_events e USING doomed d WHERE e.id = d.id RETURNING 1
    )
    SELECT count(*) INTO v_count FROM gone;
    RETURN v_count;
END;
$$;

REVOKE ALL ON FUNCTION _prune_policy_platform_events(retention_policies, integer, boolean) FROM PUBLIC;

CREATE INDEX platform_events_at_idx ON platform_events (at);
COMMENT ON INDEX platform_events_at_idx IS 'Retention finds the oldest events by it (_prune_policy_platform_events).';

INSERT INTO retention_policies (name, pruner, keep, batch_size, description) VALUES
    ('platform_events', '_prune_policy_platform_events', interval '90 days', 1000,
     'circuit-breaker events, by at; each platform''s newest stays');

COMMIT;
