-- Deploy taskpool:mv_store_category_prices to pg
-- requires: store_products

BEGIN;
SET client_min_messages = 'warning';

-- mv_store_category_prices
-- Analytics: per store and category, the products on the menu now, how many are in stock, and their prices.
CREATE MATERIALIZED VIEW mv_store_category_prices AS
SELECT sp.dispensary_id,
       sp.category,
       count(*) AS products,
       count(*) FILTER (WHERE sp.in_stock) AS in_stock,
       min(sp.price) AS min_price,
       round(avg(sp.price), 2) AS avg_price,
       max(sp.price) AS max_price
FROM store_products sp
WHERE sp.missing_since IS NULL
GROUP BY sp.dispensary_id, sp.category;

COMMENT ON MATERIALIZED VIEW mv_store_category_prices IS
    'Products not missing, per store and category (NULL: uncategorized). Prices ignore products without '
    'one; in_stock counts stock > 0. As of the last refresh_analytics().';

-- NULLS NOT DISTINCT: the uncategorized group is one row per store, and the index covers every
-- row, so REFRESH ... CONCURRENTLY can use it.
CREATE UNIQUE INDEX mv_store_category_prices_key_idx
    ON mv_store_category_prices (dispensary_id, category) NULLS NOT DISTINCT;
COMMENT ON INDEX mv_store_category_prices_key_idx IS
    'One row per store and category; what REFRESH MATERIALIZED VIEW CONCURRENTLY matches rows by.';

COMMIT;
