-- Deploy taskpool_crawler:product_images to pg
-- requires: store_products
-- requires: crawler_roles
-- requires: taskpool:taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- product_images
-- Each image's bytes, stored once per content hash, however many URLs and products show it.
CREATE TABLE product_images (
    sha256        text        PRIMARY KEY,
    storage_key   text        NOT NULL UNIQUE,
    size_bytes    integer     NOT NULL,
    content_type  text        NOT NULL,
    stored_at     timestamptz NOT NULL DEFAULT taskpool_now(),

    CONSTRAINT product_images_sha256_is_hex CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    -- The content-addressed layout: images/<first two hex digits>/<sha256>.<extension>.
    CONSTRAINT product_images_storage_key_is_content_addressed
        CHECK (storage_key = 'images/' || left(sha256, 2) || '/' || sha256 || '.' || split_part(storage_key, '.', 2)
               AND split_part(storage_key, '.', 2) IN ('png', 'jpg', 'gif')),
    CONSTRAINT product_images_size_positive CHECK (size_bytes > 0),
    CONSTRAINT product_images_content_type_known
        CHECK (content_type IN ('image/png', 'image/jpeg', 'image/gif'))
);

COMMENT ON TABLE product_images IS
    'Product images, one row per distinct content (sha256), written by record_product_image after the '
    'image_download handler stored the bytes at storage_key (relative to the storage directory, beside the '
    'payloads). Two URLs serving the same bytes share a row and a file.';
COMMENT ON COLUMN product_images.storage_key IS
    'images/<first two hex digits of sha256>/<sha256>.<png|jpg|gif>, relative to the storage directory.';
COMMENT ON COLUMN product_images.size_bytes IS 'The size of the stored bytes.';
COMMENT ON COLUMN product_images.content_type IS 'The type the bytes are (their magic bytes agreed with the answer''s Content-Type).';

-- product_image_urls
-- Each image URL a menu named: what it downloaded to, or when and why it failed.
CREATE TABLE product_image_urls (
    image_url           text        PRIMARY KEY,
    platform            text        NOT NULL,
    image_sha256        text        REFERENCES product_images (sha256) ON DELETE SET NULL,
    first_seen_at       timestamptz NOT NULL DEFAULT taskpool_now(),
    last_downloaded_at  timestamptz,
    last_failed_at      timestamptz,
    last_error          text,

    CONSTRAINT product_image_urls_is_http CHECK (image_url ~ '^https?://[^[:space:]]+$' AND length(image_url) <= 2048),
    CONSTRAINT product_image_urls_downloaded_when_stored CHECK (image_sha256 IS NULL OR last_downloaded_at IS NOT NULL),
    CONSTRAINT product_image_urls_error_with_failure CHECK (last_error IS NULL OR last_failed_at IS NOT NULL)
);

COMMENT ON TABLE product_image_urls IS
    'Image URLs named by applied menus (link_product_images), each downloaded once (an image_download task, '
    'through its platform''s rate limit): image_sha256 is the content it gave. A URL is taken to serve the '
    'same image for good: once stored it is never downloaded again.';
COMMENT ON COLUMN product_image_urls.platform IS 'The platform of the store whose menu named it first: its downloads count against that platform''s rate limit.';
COMMENT ON COLUMN product_image_urls.image_sha256 IS 'The stored content; NULL until a download succeeded.';
COMMENT ON COLUMN product_image_urls.last_downloaded_at IS 'When the download that stored image_sha256 was recorded.';
COMMENT ON COLUMN product_image_urls.last_failed_at IS
    'When a download attempt last failed (a broken image: 404, not an image, cut short); link_product_images '
    'queues no new download for a day after a failure.';
COMMENT ON COLUMN product_image_urls.last_error IS 'What that attempt said.';

-- store_product_images
-- Each store product's image: the URL its newest applied payload gave.
CREATE TABLE store_product_images (
    dispensary_id        integer     NOT NULL,
    platform_product_id  text        NOT NULL,
    image_url            text        NOT NULL REFERENCES product_image_urls (image_url),
    linked_at            timestamptz NOT NULL DEFAULT taskpool_now(),
    PRIMARY KEY (dispensary_id, platform_product_id),
    FOREIGN KEY (dispensary_id, platform_product_id)
        REFERENCES store_products (dispensary_id, platform_product_id) ON DELETE CASCADE
);

COMMENT ON TABLE store_product_images IS
    'The image of each store product, as the newest applied payload that had the product names it '
    '(link_product_images); a product whose menu gives no image has no row. Its bytes: '
    'product_image_urls.image_sha256 -> product_images.';
COMMENT ON COLUMN store_product_images.linked_at IS 'When the product got this URL.';

CREATE INDEX store_product_images_image_url_idx ON store_product_images (image_url);
COMMENT ON INDEX store_product_images_image_url_idx IS 'Finds the products that show an image URL.';
CREATE INDEX product_image_urls_image_sha256_idx ON product_image_urls (image_sha256);
COMMENT ON INDEX product_image_urls_image_sha256_idx IS 'Finds the URLs of a stored image (ON DELETE SET NULL from product_images).';

-- The role whose tasks download them: one task per URL (its dedupe key), no store (an image is
-- shared across stores, and a store's other tasks must not wait for it), the store's platform
-- on the task, so claims and requests follow that platform's pause, rate limit and circuit.
INSERT INTO task_roles (role, description, requires_store, max_retries, stale_threshold, backoff_base, backoff_cap) VALUES
    ('image_download', 'Download a product image and store it once per content hash', false, 3, '10 minutes', '30 seconds', '30 minutes')
ON CONFLICT (role) DO NOTHING;

COMMIT;
