-- Revert taskpool_crawler:record_product_image from pg

-- Nothing to undo: deploy/record_product_image.sql redefined record_product_image as product_image_functions had left it.

BEGIN;
COMMIT;
