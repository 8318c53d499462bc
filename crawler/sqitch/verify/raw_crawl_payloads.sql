-- Verify taskpool:raw_crawl_payloads on pg

BEGIN;

SELECT id, dispensary_id, fetched_at, storage_path, size_bytes, sha256, product_count, status,
       error_message, applied_at, apply_result
FROM raw_crawl_payloads
WHERE FALSE;

SELECT 1/COUNT(*) FROM pg_catalog.pg_indexes
WHERE tablename = 'raw_crawl_payloads' AND indexname = 'raw_crawl_payloads_by_store_idx';

ROLLBACK;
