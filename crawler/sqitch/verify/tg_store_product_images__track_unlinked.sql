-- Verify taskpool_crawler:tg_store_product_images__track_unlinked on pg

BEGIN;

SELECT 'tg_store_product_images__track_unlinked()'::regprocedure;
SELECT 1 / count(*) FROM pg_trigger
WHERE tgrelid = 'store_product_images'::regclass AND tgname LIKE '\_800\_track\_%' HAVING count(*) = 3;

ROLLBACK;
