-- Verify taskpool:v_stores on pg

BEGIN;

SELECT id, name, platform, platform_dispensary_id, state_code, city, active, last_crawled_at, payloads,
       applied_payloads, corrupt_payloads, last_fetched_at, products, missing_products
FROM v_stores
WHERE false;

ROLLBACK;
