-- Verify taskpool:mv_store_category_prices on pg

BEGIN;

SELECT dispensary_id, category, products, in_stock, min_price, avg_price, max_price
FROM mv_store_category_prices
WHERE FALSE;

SELECT 1/COUNT(*) FROM pg_catalog.pg_indexes
WHERE tablename = 'mv_store_category_prices' AND indexname = 'mv_store_category_prices_key_idx';

ROLLBACK;
