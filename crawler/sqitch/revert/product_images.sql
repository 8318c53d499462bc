-- Revert taskpool_crawler:product_images from pg
-- A role with tasks cannot go (worker_tasks references it): revert the crawler's tasks first.

BEGIN;

DELETE FROM task_roles WHERE role = 'image_download';
DROP TABLE store_product_images;
DROP TABLE product_image_urls;
DROP TABLE product_images;

COMMIT;
