-- Deploy taskpool_crawler:product_image_urls_unlinked_at to pg
-- requires: product_images

BEGIN;
SET client_min_messages = 'warning';

ALTER TABLE product_image_urls ADD COLUMN unlinked_at timestamptz;

COMMENT ON COLUMN product_image_urls.unlinked_at IS
    'When the last product showing this URL stopped showing it (tg_store_product_images__track_unlinked); '
    'NULL while a product shows it. Retention (the product_images policy) deletes a URL unlinked for longer '
    'than its keep, and the stored image only it named.';

CREATE INDEX product_image_urls_unlinked_at_idx ON product_image_urls (unlinked_at)
    WHERE unlinked_at IS NOT NULL;
COMMENT ON INDEX product_image_urls_unlinked_at_idx IS
    'Retention finds the URLs unlinked longest ago by it, without reading the linked ones.';

-- The URLs no product shows today have been unlinked since some time before now: counting from
-- now keeps each of them a whole keep more, never less.
UPDATE product_image_urls u
SET unlinked_at = taskpool_now()
WHERE NOT EXISTS (SELECT FROM store_product_images l WHERE l.image_url = u.image_url);

COMMIT;
