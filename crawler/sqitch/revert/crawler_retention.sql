-- Revert taskpool_crawler:crawler_retention from pg

BEGIN;

DELETE FROM retention_policies WHERE name IN ('crawl_payloads', 'product_snapshots');
DROP FUNCTION _prune_policy_product_snapshots(retention_policies, integer, boolean);
DROP FUNCTION _prune_policy_crawl_payloads(retention_policies, integer, boolean);
DROP INDEX store_product_snapshots_captured_at_idx;
DROP INDEX raw_crawl_payloads_fetched_at_idx;

COMMIT;
