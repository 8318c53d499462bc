-- Revert taskpool_crawler:link_product_images from pg

-- Nothing to undo: deploy/link_product_images.sql redefined link_product_images as product_image_functions had left it.

BEGIN;
COMMIT;
