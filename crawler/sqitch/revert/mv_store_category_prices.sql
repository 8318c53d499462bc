-- Revert taskpool:mv_store_category_prices from pg

BEGIN;

DROP MATERIALIZED VIEW mv_store_category_prices;

COMMIT;
