-- Verify taskpool:mv_store_freshness on pg

BEGIN;

SELECT dispensary_id, name, platform, state_code, active, last_crawled_at, products, missing_products,
       latest_payload_id, latest_payload_fetched_at
FROM mv_store_freshness
WHERE FALSE;

SELECT 1/COUNT(*) FROM pg_catalog.pg_indexes
WHERE tablename = 'mv_store_freshness' AND indexname = 'mv_store_freshness_key_idx';

ROLLBACK;
