-- Verify taskpool_crawler:product_image_functions on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'link_product_images(bigint, jsonb)', 'execute');
SELECT has_function_privilege('taskpool_worker', 'record_product_image(text, text, text, integer, text)', 'execute');
SELECT has_function_privilege('taskpool_worker', 'record_image_download_failure(text, text)', 'execute');
SELECT _image_download_dedupe_key('https://img.example/p-1.png');

ROLLBACK;
