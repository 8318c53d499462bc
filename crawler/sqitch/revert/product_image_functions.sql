-- Revert taskpool_crawler:product_image_functions from pg

BEGIN;

DROP FUNCTION record_image_download_failure(text, text);
DROP FUNCTION record_product_image(text, text, text, integer, text);
DROP FUNCTION link_product_images(bigint, jsonb);
DROP FUNCTION _image_download_dedupe_key(text);

COMMIT;
