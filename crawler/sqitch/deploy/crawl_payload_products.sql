-- Deploy taskpool:crawl_payload_products to pg
-- requires: raw_crawl_payloads

BEGIN;
SET client_min_messages = 'warning';

-- crawl_payload_products
-- The normalized products of each applied payload, as parsed: what diff_payloads compares.
CREATE TABLE crawl_payload_products (
    payload_id           bigint        NOT NULL REFERENCES raw_crawl_payloads (id) ON DELETE CASCADE,
    platform_product_id  text          NOT NULL,
    name                 text          NOT NULL,
    brand                text,
    category             text,
    price                numeric(10,2),
    stock                integer,
    PRIMARY KEY (payload_id, platform_product_id),

    CONSTRAINT crawl_payload_products_price_not_negative CHECK (price >= 0),
    CONSTRAINT crawl_payload_products_stock_not_negative CHECK (stock >= 0)
);

COMMENT ON TABLE crawl_payload_products IS
    'Products per applied payload, written by apply_menu_payload. Deleting a payload deletes its rows.';
COMMENT ON COLUMN crawl_payload_products.price IS 'NULL: the menu gave no price.';
COMMENT ON COLUMN crawl_payload_products.stock IS 'Units in stock; NULL: the menu gave no quantity.';

COMMIT;
