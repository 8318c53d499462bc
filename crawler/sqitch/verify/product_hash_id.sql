-- Verify taskpool_crawler:product_hash_id on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'product_hash_id(text, text, text, text)', 'execute');

ROLLBACK;
