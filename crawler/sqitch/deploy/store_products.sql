-- Deploy taskpool:store_products to pg
-- requires: dispensaries
-- requires: raw_crawl_payloads

BEGIN;
SET client_min_messages = 'warning';

-- store_products
-- Each store's current menu: a row per product ever seen there, as its newest applied payload shows it.
CREATE TABLE store_products (
    dispensary_id        integer       NOT NULL REFERENCES dispensaries (id) ON DELETE CASCADE,
    platform_product_id  text          NOT NULL,
    name                 text          NOT NULL,
    brand                text,
    category             text,
    price                numeric(10,2),
    stock                integer,
    in_stock             boolean       GENERATED ALWAYS AS (stock > 0) STORED,
    first_seen_at        timestamptz   NOT NULL,
    last_seen_at         timestamptz   NOT NULL,
    missing_since        timestamptz,
    last_payload_id      bigint        REFERENCES raw_crawl_payloads (id) ON DELETE SET NULL,
    PRIMARY KEY (dispensary_id, platform_product_id),

    CONSTRAINT store_products_price_not_negative CHECK (price >= 0),
    CONSTRAINT store_products_stock_not_negative CHECK (stock >= 0),
    CONSTRAINT store_products_seen_in_order CHECK (last_seen_at >= first_seen_at),
    -- A product goes missing in a payload fetched after the last one that had it.
    CONSTRAINT store_products_missing_after_seen CHECK (missing_since >= last_seen_at)
);

COMMENT ON TABLE store_products IS
    'Products per store, kept by apply_menu_payload from the store''s newest applied payload; '
    'a payload older than that one never moves them back.';
COMMENT ON COLUMN store_products.in_stock IS 'stock > 0; NULL when the menu gives no quantity.';
COMMENT ON COLUMN store_products.first_seen_at IS 'fetched_at of the first payload that had the product.';
COMMENT ON COLUMN store_products.last_seen_at IS 'fetched_at of the newest payload that had the product.';
COMMENT ON COLUMN store_products.missing_since IS
    'fetched_at of the first payload without the product since it was last seen; NULL while the newest '
    'applied payload has it.';
COMMENT ON COLUMN store_products.last_payload_id IS
    'The newest payload that had the product; NULL once that payload is deleted.';

-- Deleting a payload finds the products that name it by this index.
CREATE INDEX store_products_last_payload_idx ON store_products (last_payload_id);
COMMENT ON INDEX store_products_last_payload_idx IS 'Serves ON DELETE SET NULL from raw_crawl_payloads.';

COMMIT;
