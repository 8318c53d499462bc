-- Verify taskpool:store_products on pg

BEGIN;

SELECT dispensary_id, platform_product_id, name, brand, category, price, stock, in_stock,
       first_seen_at, last_seen_at, missing_since, last_payload_id
FROM store_products
WHERE FALSE;

ROLLBACK;
