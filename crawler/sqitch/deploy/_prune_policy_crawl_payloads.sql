-- Deploy taskpool_crawler:_prune_policy_crawl_payloads to pg
-- requires: crawl_payload_retention_spares_active_tasks

-- _prune_policy_crawl_payloads's home: its live body, unchanged from crawl_payload_retention_spares_active_tasks.
-- Change _prune_policy_crawl_payloads here, with `sqitch rework _prune_policy_crawl_payloads`.

BEGIN;
SET client_min_messages = 'warning';

-- _prune_policy_crawl_payloads
-- Prunes payload rows fetched longer ago than the policy's keep, but each store's two newest applied ones and those an active task names, queueing their files for removal (crawl_payloads).
CREATE OR REPLACE FUNCTION _prune_policy_crawl_payloads(policy retention_policies, max_rows integer, dry_run boolean)
RETURNS bigint
LANGUAGE plpgsql
AS $$
-- A store's two newest applied payloads stay whatever their age: what diff_latest_payloads
-- compares and mv_store_freshness reads. So does a payload that a pending, claimed or running
-- task names in its payload's payload_id (a product_refresh waiting to apply it, a retry of
-- one, any role chained with that key): retention never removes what an active task needs.
-- A payload's products (crawl_payload_products) go with it; its snapshots stay, their payload_id set NULL (the product_snapshots policy has its own age).
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
                  AND p.id::text NOT IN (SELECT payload_id FROM _payloads_active_tasks_name())
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
          AND p.id::text NOT IN (SELECT payload_id FROM _payloads_active_tasks_name())
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

COMMIT;
