-- Deploy taskpool_crawler:_prune_policy_product_snapshots to pg
-- requires: crawler_retention

-- _prune_policy_product_snapshots's home: its live body, unchanged from crawler_retention.
-- Change _prune_policy_product_snapshots here, with `sqitch rework _prune_policy_product_snapshots`.

BEGIN;
SET client_min_messages = 'warning';

-- _prune_policy_product_snapshots
-- Prunes price and stock snapshots captured longer ago than the policy's keep (product_snapshots).
CREATE OR REPLACE FUNCTION _prune_policy_product_snapshots(policy retention_policies, max_rows integer, dry_run boolean)
RETURNS bigint
LANGUAGE plpgsql
AS $$
-- A product's current price and stock are in store_products: only the history goes.
DECLARE
    v_cutoff timestamptz := taskpool_now() - policy.keep;
    v_count  bigint;
BEGIN
    IF dry_run THEN
        RETURN (SELECT count(*) FROM store_product_snapshots s WHERE s.captured_at < v_cutoff);
    END IF;
    WITH doomed AS (
        SELECT s.id
        FROM store_product_snapshots s
        WHERE s.captured_at < v_cutoff
        ORDER BY s.captured_at
        LIMIT max_rows
        FOR UPDATE SKIP LOCKED
    ),
    gone AS (
        DELETE FROM store_product_snapshots s USING doomed d WHERE s.id = d.id RETURNING 1
    )
    SELECT count(*) INTO v_count FROM gone;
    RETURN v_count;
END;
$$;

COMMIT;
