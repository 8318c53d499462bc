-- Deploy taskpool:raw_crawl_payloads to pg
-- requires: dispensaries

BEGIN;
SET client_min_messages = 'warning';

-- raw_crawl_payloads
-- One row per menu fetched: where its raw JSON (gzip) lies on disk, its checksum, and whether it was applied.
CREATE TABLE raw_crawl_payloads (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dispensary_id  integer     NOT NULL REFERENCES dispensaries (id) ON DELETE CASCADE,
    fetched_at     timestamptz NOT NULL,
    storage_path   text        NOT NULL,
    size_bytes     integer     NOT NULL,
    sha256         text        NOT NULL,
    product_count  integer,
    status         text        NOT NULL DEFAULT 'saved',
    error_message  text,
    applied_at     timestamptz,
    apply_result   jsonb,

    CONSTRAINT raw_crawl_payloads_one_per_storage_path UNIQUE (storage_path),
    CONSTRAINT raw_crawl_payloads_storage_path_not_blank CHECK (btrim(storage_path) <> ''),
    CONSTRAINT raw_crawl_payloads_size_bytes_positive CHECK (size_bytes > 0),
    CONSTRAINT raw_crawl_payloads_sha256_is_hex CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    CONSTRAINT raw_crawl_payloads_product_count_not_negative CHECK (product_count >= 0),
    CONSTRAINT raw_crawl_payloads_status_known CHECK (status IN ('saved', 'applied', 'corrupt')),
    -- River-style invariants: the status says which of the outcome columns are set.
    CONSTRAINT raw_crawl_payloads_applied_iff_applied_at
        CHECK ((status = 'applied') = (applied_at IS NOT NULL AND product_count IS NOT NULL
                                       AND apply_result IS NOT NULL)),
    CONSTRAINT raw_crawl_payloads_corrupt_iff_error
        CHECK ((status = 'corrupt') = (error_message IS NOT NULL))
);

COMMENT ON TABLE raw_crawl_payloads IS
    'Menu payloads as fetched. Write it through record_crawl_payload, apply_menu_payload and mark_payload_corrupt.';
COMMENT ON COLUMN raw_crawl_payloads.storage_path IS
    'The gzip-compressed raw JSON, relative to the storage directory: payloads/YYYY/MM/DD/store_<id>_<ts>.json.gz.';
COMMENT ON COLUMN raw_crawl_payloads.sha256 IS 'sha256 of the file as stored, lower-case hex.';
COMMENT ON COLUMN raw_crawl_payloads.status IS
    'saved: recorded, not parsed yet; goes to applied or corrupt. '
    'applied: its products are in crawl_payload_products (and, unless a newer payload was applied first, '
    'in store_products); final. corrupt: the file could not be parsed (error_message says why); final, the '
    'file is kept for inspection.';
COMMENT ON COLUMN raw_crawl_payloads.product_count IS 'How many products the payload held; NULL until applied.';
COMMENT ON COLUMN raw_crawl_payloads.apply_result IS
    'What apply_menu_payload returned; a repeated apply returns it again.';

-- A store's payloads newest first: the latest applied one, the two a diff compares, the FK cascade.
CREATE INDEX raw_crawl_payloads_by_store_idx ON raw_crawl_payloads (dispensary_id, fetched_at DESC);
COMMENT ON INDEX raw_crawl_payloads_by_store_idx IS
    'Serves a store''s payloads newest first (apply_menu_payload, diff_latest_payloads, mv_store_freshness).';

COMMIT;
