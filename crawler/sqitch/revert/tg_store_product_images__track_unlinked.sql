-- Revert taskpool_crawler:tg_store_product_images__track_unlinked from pg

BEGIN;

DROP TRIGGER _800_track_linked_urls ON store_product_images;
DROP TRIGGER _800_track_relinked_urls ON store_product_images;
DROP TRIGGER _800_track_unlinked_urls ON store_product_images;
DROP FUNCTION tg_store_product_images__track_unlinked();

COMMIT;
