-- Deploy taskpool:mv_store_freshness to pg
-- requires: dispensaries_crawler_columns
-- requires: store_products
-- requires: raw_crawl_payloads

BEGIN;
SET client_min_messages = 'warning';

-- mv_store_freshness
-- Analytics: per store, when it was last crawled, its newest applied payload, and how many products it has and lost.
CREATE MATERIALIZED VIEW mv_store_freshness AS
SELECT d.id AS dispensary_id,
       d.name,
       d.platform,
       d.state_code,
       d.active,
       d.last_crawled_at,
       coalesce(n.products, 0) AS products,
       coalesce(n.missing_products, 0) AS missing_products,
       latest.id AS latest_payload_id,
       latest.fetched_at AS latest_payload_fetched_at
FROM dispensaries d
LEFT JOIN (
    SELECT sp.dispensary_id,
           count(*) FILTER (WHERE sp.missing_since IS NULL) AS products,
           count(*) FILTER (WHERE sp.missing_since IS NOT NULL) AS missing_products
    FROM store_products sp
    GROUP BY sp.dispensary_id
) AS n ON n.dispensary_id = d.id
-- the newest applied payload: what store_products show
LEFT JOIN LATERAL (
    SELECT p.id, p.fetched_at
    FROM raw_crawl_payloads p
    WHERE p.dispensary_id = d.id AND p.status = 'applied'
    ORDER BY p.fetched_at DESC, p.id DESC
    LIMIT 1
) AS latest ON true;

COMMENT ON MATERIALIZED VIEW mv_store_freshness IS
    'Every store: last_crawled_at (newest payload recorded), the newest applied payload, products on the '
    'menu and products gone missing. As of the last refresh_analytics().';

CREATE UNIQUE INDEX mv_store_freshness_key_idx ON mv_store_freshness (dispensary_id);
COMMENT ON INDEX mv_store_freshness_key_idx IS
    'One row per store; what REFRESH MATERIALIZED VIEW CONCURRENTLY matches rows by.';

COMMIT;
