-- Deploy taskpool:store_product_snapshots to pg
-- requires: store_products
-- requires: raw_crawl_payloads

BEGIN;
SET client_min_messages = 'warning';

-- store_product_snapshots
-- Price and stock history: one row per product, (price, stock) and UTC day observed, whatever the number of crawls.
CREATE TABLE store_product_snapshots (
    id                   bigint        GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dispensary_id        integer       NOT NULL,
    platform_product_id  text          NOT NULL,
    price                numeric(10,2),
    stock                integer,
    captured_at          timestamptz   NOT NULL,
    payload_id           bigint        REFERENCES raw_crawl_payloads (id) ON DELETE SET NULL,
    dedupe_key           text          NOT NULL,

    CONSTRAINT store_product_snapshots_product_fkey FOREIGN KEY (dispensary_id, platform_product_id)
        REFERENCES store_products (dispensary_id, platform_product_id) ON DELETE CASCADE,
    CONSTRAINT store_product_snapshots_one_per_dedupe_key UNIQUE (dedupe_key),
    CONSTRAINT store_product_snapshots_dedupe_key_is_sha256 CHECK (dedupe_key ~ '^[0-9a-f]{64}$'),
    CONSTRAINT store_product_snapshots_price_not_negative CHECK (price >= 0),
    CONSTRAINT store_product_snapshots_stock_not_negative CHECK (stock >= 0)
);

COMMENT ON TABLE store_product_snapshots IS
    'Observations of price and stock, written by apply_menu_payload. A crawl that sees what an earlier '
    'crawl of the same UTC day saw adds nothing; so does applying a payload twice.';
COMMENT ON COLUMN store_product_snapshots.captured_at IS
    'fetched_at of the first payload (of that day) that showed this price and stock.';
COMMENT ON COLUMN store_product_snapshots.payload_id IS 'That payload; NULL once it is deleted (the history stays).';
COMMENT ON COLUMN store_product_snapshots.dedupe_key IS
    'sha256 hex of dispensary_id|platform_product_id|price|stock|YYYY-MM-DD (UTC day of captured_at); a NULL '
    'price or stock is the empty string, and | and \ in the product id are escaped with \.';
COMMENT ON CONSTRAINT store_product_snapshots_one_per_dedupe_key ON store_product_snapshots IS
    'Rule: one snapshot per product, price, stock and day; the ON CONFLICT arbiter of apply_menu_payload.';

-- A product's history in time order; also the FK cascade from store_products.
CREATE INDEX store_product_snapshots_history_idx
    ON store_product_snapshots (dispensary_id, platform_product_id, captured_at);
COMMENT ON INDEX store_product_snapshots_history_idx IS
    'Serves a product''s price and stock history, and ON DELETE CASCADE from store_products.';

-- Deleting a payload finds the snapshots that name it by this index.
CREATE INDEX store_product_snapshots_payload_idx ON store_product_snapshots (payload_id);
COMMENT ON INDEX store_product_snapshots_payload_idx IS 'Serves ON DELETE SET NULL from raw_crawl_payloads.';

COMMIT;
