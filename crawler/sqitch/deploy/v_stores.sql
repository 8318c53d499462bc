-- Deploy taskpool:v_stores to pg
-- requires: dispensaries_crawler_columns
-- requires: raw_crawl_payloads
-- requires: store_products

BEGIN;
SET client_min_messages = 'warning';

-- v_stores
-- Per store: where it is, its payloads by status and the last one fetched, and its current menu's
-- size, for the dashboard's stores page.
CREATE VIEW v_stores AS
SELECT d.id,
       d.name,
       d.platform,
       d.platform_dispensary_id,
       d.state_code,
       d.city,
       d.active,
       d.last_crawled_at,
       coalesce(p.payloads, 0) AS payloads,
       coalesce(p.applied_payloads, 0) AS applied_payloads,
       coalesce(p.corrupt_payloads, 0) AS corrupt_payloads,
       p.last_fetched_at,
       coalesce(m.products, 0) AS products,
       coalesce(m.missing_products, 0) AS missing_products
FROM dispensaries d
LEFT JOIN LATERAL (
    SELECT count(*) AS payloads,
           count(*) FILTER (WHERE r.status = 'applied') AS applied_payloads,
           count(*) FILTER (WHERE r.status = 'corrupt') AS corrupt_payloads,
           max(r.fetched_at) AS last_fetched_at
    FROM raw_crawl_payloads r
    WHERE r.dispensary_id = d.id
) AS p ON true
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE sp.missing_since IS NULL) AS products,
           count(*) FILTER (WHERE sp.missing_since IS NOT NULL) AS missing_products
    FROM store_products sp
    WHERE sp.dispensary_id = d.id
) AS m ON true;

COMMENT ON VIEW v_stores IS
    'Per store (dispensaries): its place and platform ids; its payloads (raw_crawl_payloads), how '
    'many applied and corrupt, the last fetched_at; its products on the menu now and those gone '
    'missing (store_products.missing_since).';

COMMIT;
