-- Verify taskpool_crawler:product_image_urls_unlinked_at on pg

BEGIN;

SELECT unlinked_at FROM product_image_urls WHERE false;
SELECT 'product_image_urls_unlinked_at_idx'::regclass;

ROLLBACK;
