-- Revert taskpool_crawler:product_size from pg

BEGIN;

ALTER TABLE store_products DROP COLUMN size;
ALTER TABLE crawl_payload_products DROP COLUMN size;

COMMIT;
