-- Verify taskpool_crawler:_prune_policy_crawl_payloads on pg

BEGIN;

SELECT '_prune_policy_crawl_payloads(retention_policies,integer,boolean)'::regprocedure;

ROLLBACK;
