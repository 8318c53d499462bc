-- Verify taskpool:crawl_payload_products on pg

BEGIN;

SELECT payload_id, platform_product_id, name, brand, category, price, stock
FROM crawl_payload_products
WHERE FALSE;

ROLLBACK;
