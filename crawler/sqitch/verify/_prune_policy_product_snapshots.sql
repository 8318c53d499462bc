-- Verify taskpool_crawler:_prune_policy_product_snapshots on pg

BEGIN;

SELECT '_prune_policy_product_snapshots(retention_policies,integer,boolean)'::regprocedure;

ROLLBACK;
