-- Revert taskpool:crawl_payload_products from pg

BEGIN;

DROP TABLE crawl_payload_products;

COMMIT;
