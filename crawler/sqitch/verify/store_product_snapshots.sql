-- Verify taskpool:store_product_snapshots on pg

BEGIN;

SELECT id, dispensary_id, platform_product_id, price, stock, captured_at, payload_id, dedupe_key
FROM store_product_snapshots
WHERE FALSE;

SELECT 1/COUNT(*) FROM pg_catalog.pg_constraint
WHERE conrelid = 'store_product_snapshots'::regclass
  AND conname = 'store_product_snapshots_one_per_dedupe_key' AND contype = 'u';

ROLLBACK;
