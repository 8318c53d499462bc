-- Verify taskpool_crawler:crawler_retention on pg

BEGIN;

SELECT has_function_privilege('_prune_policy_crawl_payloads(retention_policies, integer, boolean)', 'execute');
SELECT has_function_privilege('_prune_policy_product_snapshots(retention_policies, integer, boolean)', 'execute');
SELECT 1/count(*) FROM retention_policies WHERE name = 'crawl_payloads';
SELECT 1/count(*) FROM retention_policies WHERE name = 'product_snapshots';

ROLLBACK;
