-- Verify taskpool_crawler:product_size on pg

BEGIN;

SELECT size FROM crawl_payload_products WHERE false;
SELECT size FROM store_products WHERE false;

ROLLBACK;
