-- Revert taskpool_crawler:_prune_policy_product_snapshots from pg

-- Nothing to undo: deploy/_prune_policy_product_snapshots.sql redefined _prune_policy_product_snapshots as crawler_retention had left it.

BEGIN;
COMMIT;
