-- Revert taskpool_crawler:product_image_urls_unlinked_at from pg

BEGIN;

ALTER TABLE product_image_urls DROP COLUMN unlinked_at;

COMMIT;
