-- Verify taskpool_crawler:apply_menu_payload on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'apply_menu_payload(bigint, jsonb)', 'execute');

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'apply_menu_payload' AND pg_get_functiondef(oid) LIKE '%product_hash_id(%';

ROLLBACK;
