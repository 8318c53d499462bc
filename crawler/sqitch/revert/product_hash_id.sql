-- Revert taskpool_crawler:product_hash_id from pg

BEGIN;

DROP FUNCTION product_hash_id(text, text, text, text);

COMMIT;
