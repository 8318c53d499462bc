-- Revert taskpool_crawler:record_image_download_failure from pg

-- Nothing to undo: deploy/record_image_download_failure.sql redefined record_image_download_failure as product_image_functions had left it.

BEGIN;
COMMIT;
