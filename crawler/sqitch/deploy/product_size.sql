-- Deploy taskpool_crawler:product_size to pg
-- requires: store_products
-- requires: crawl_payload_products

BEGIN;
SET client_min_messages = 'warning';

-- A menu's optional size ("3.5g", "1oz"), kept like brand and category. It is one of the
-- components product_hash_id hashes for a product the platform gives no id: two sizes of one
-- product are two products.
ALTER TABLE crawl_payload_products ADD COLUMN size text;
ALTER TABLE store_products ADD COLUMN size text;

COMMENT ON COLUMN crawl_payload_products.size IS 'The menu''s size of the product (e.g. 3.5g); NULL: none given.';
COMMENT ON COLUMN store_products.size IS 'The menu''s size of the product (e.g. 3.5g); NULL: none given.';

COMMIT;
