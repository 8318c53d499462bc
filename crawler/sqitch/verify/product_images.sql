-- Verify taskpool_crawler:product_images on pg

BEGIN;

SELECT sha256, storage_key, size_bytes, content_type, stored_at FROM product_images WHERE false;
SELECT image_url, platform, image_sha256, first_seen_at, last_downloaded_at, last_failed_at, last_error
FROM product_image_urls WHERE false;
SELECT dispensary_id, platform_product_id, image_url, linked_at FROM store_product_images WHERE false;
SELECT 1/count(*) FROM task_roles WHERE role = 'image_download';

ROLLBACK;
