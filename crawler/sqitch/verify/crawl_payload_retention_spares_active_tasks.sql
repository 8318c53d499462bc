-- Verify taskpool_crawler:crawl_payload_retention_spares_active_tasks on pg

BEGIN;

SELECT has_function_privilege('_payloads_active_tasks_name()', 'execute');
SELECT 1/count(*) FROM pg_proc
WHERE proname = '_prune_policy_crawl_payloads' AND prosrc LIKE '%_payloads_active_tasks_name()%';

ROLLBACK;
