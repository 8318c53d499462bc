-- Revert taskpool_crawler:_image_download_dedupe_key from pg

-- Nothing to undo: deploy/_image_download_dedupe_key.sql redefined _image_download_dedupe_key as product_image_functions had left it.

BEGIN;
COMMIT;
