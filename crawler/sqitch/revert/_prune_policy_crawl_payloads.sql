-- Revert taskpool_crawler:_prune_policy_crawl_payloads from pg

-- Nothing to undo: deploy/_prune_policy_crawl_payloads.sql redefined _prune_policy_crawl_payloads as crawl_payload_retention_spares_active_tasks had left it.

BEGIN;
COMMIT;
