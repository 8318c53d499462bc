-- Deploy taskpool:count_retention to pg
-- requires: apply_retention

-- count_retention's home: its live body, unchanged from apply_retention.
-- Change count_retention here, with `sqitch rework count_retention`.

BEGIN;
SET client_min_messages = 'warning';

-- count_retention
-- What apply_retention would delete now, per policy (enabled or not), deleting nothing: retention's dry run.
CREATE OR REPLACE FUNCTION count_retention()
RETURNS TABLE (policy text, enabled boolean, keep interval, would_prune bigint, error text)
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT * FROM count_retention();
-- Each policy's pruner counts with dry_run; one that fails says why in error (would_prune NULL).
DECLARE
    v_policy retention_policies;
BEGIN
    FOR v_policy IN SELECT * FROM retention_policies p ORDER BY p.name LOOP
        policy := v_policy.name;
        enabled := v_policy.enabled;
        keep := v_policy.keep;
        would_prune := NULL;
        error := NULL;
        BEGIN
            EXECUTE format('SELECT %s($1, NULL, true)', _retention_pruner(v_policy)::oid::regproc)
                INTO would_prune USING v_policy;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS error = MESSAGE_TEXT;
        END;
        RETURN NEXT;
    END LOOP;
END;
$$;

COMMIT;
