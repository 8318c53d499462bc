-- Deploy taskpool_crawler:crawler_retention to pg
-- requires: payload_file_removals
-- requires: raw_crawl_payloads
-- requires: store_product_snapshots
-- requires: taskpool:retention_policies
-- requires: taskpool:apply_retention
-- requires: taskpool:enqueue_task

BEGIN;
SET client_min_messages = 'warning';

-- The crawler's retention policies, through the core's interface: rows of retention_policies
-- naming the crawler's pruners, pruner(policy, max_rows, dry_run) returning bigint, which the
-- core's apply_retention (each tick) and count_retention call.

-- Oldest first, across stores: what the two pruners walk.
CREATE INDEX raw_crawl_payloads_fetched_at_idx ON raw_crawl_payloads (fetched_at);
COMMENT ON INDEX raw_crawl_payloads_fetched_at_idx IS 'Serves the crawl_payloads retention policy, oldest first.';
CREATE INDEX store_product_snapshots_captured_at_idx ON store_product_snapshots (captured_at);
COMMENT ON INDEX store_product_snapshots_captured_at_idx IS 'Serves the product_snapshots retention policy, oldest first.';

-- _prune_policy_crawl_payloads
-- Prunes payload rows fetched longer ago than the policy's keep, but each store's two newest applied ones, queueing their files for removal (crawl_payloads).
CREATE FUNCTION _prune_policy_crawl_payloads(policy retention_policies, max_rows integer, dry_run boolean)
RETURNS bigint
LANGUAGE plpgsql
AS $$
-- A store's two newest applied payloads stay whatever their age: what diff_latest_payloads
-- compares and mv_store_freshness reads. A payload's products (crawl_payload_products) go with
-- it; its snapshots stay, their payload_id set NULL (the product_snapshots policy has its own age).
-- The database cannot remove a file: each deleted row's storage_path goes into
-- payload_file_removals in the same statement, and, when any did, a payload_file_removal task
-- is enqueued (one at a time: its dedupe key) for a crawler worker to remove the files.
DECLARE
    v_cutoff timestamptz := taskpool_now() - policy.keep;
    v_count  bigint;
BEGIN
    IF dry_run THEN
        RETURN (SELECT count(*) FROM raw_crawl_payloads p
                WHERE p.fetched_at < v_cutoff
                  AND (p.status <> 'applied' OR (SELECT count(*) FROM (
                           SELECT FROM raw_crawl_payloads n
                           WHERE n.dispensary_id = p.dispensary_id AND n.status = 'applied'
                             AND (n.fetched_at, n.id) > (p.fetched_at, p.id)
                           LIMIT 2) newer) = 2));
    END IF;
    WITH doomed AS (
        SELECT p.id
        FROM raw_crawl_payloads p
        WHERE p.fetched_at < v_cutoff
          AND (p.status <> 'applied' OR (SELECT count(*) FROM (
                   SELECT FROM raw_crawl_payloads n
                   WHERE n.dispensary_id = p.dispensary_id AND n.status = 'applied'
                     AND (n.fetched_at, n.id) > (p.fetched_at, p.id)
                   LIMIT 2) newer) = 2)
        ORDER BY p.fetched_at
        LIMIT max_rows
        FOR UPDATE SKIP LOCKED
    ),
    gone AS (
        DELETE FROM raw_crawl_payloads p USING doomed d WHERE p.id = d.id
        RETURNING p.id, p.storage_path
    ),
    queued AS (
        INSERT INTO payload_file_removals (storage_path, payload_id)
        SELECT g.storage_path, g.id FROM gone g
        ON CONFLICT (storage_path) DO NOTHING
    )
    SELECT count(*) INTO v_count FROM gone;
    IF v_count > 0 THEN
        PERFORM enqueue_task('payload_file_removal', dedupe_key := 'payload_file_removal');
    END IF;
    RETURN v_count;
END;
$$;

-- _prune_policy_product_snapshots
-- Prunes price and stock snapshots captured longer ago than the policy's keep (product_snapshots).
CREATE FUNCTION _prune_policy_product_snapshots(policy retention_policies, max_rows integer, dry_run boolean)
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

REVOKE ALL ON FUNCTION _prune_policy_crawl_payloads(retention_policies, integer, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION _prune_policy_product_snapshots(retention_policies, integer, boolean) FROM PUBLIC;

-- Payloads a month (the files are most of the disk), snapshots a year (the price history).
INSERT INTO retention_policies (name, pruner, keep, batch_size, description) VALUES
    ('crawl_payloads', '_prune_policy_crawl_payloads', interval '30 days', 100,
     'the crawler''s payload rows (their files removed by a payload_file_removal task), by fetched_at; '
     'each store''s two newest applied payloads stay'),
    ('product_snapshots', '_prune_policy_product_snapshots', interval '365 days', 1000,
     'the crawler''s price and stock snapshots, by captured_at')
ON CONFLICT (name) DO NOTHING;

COMMIT;
