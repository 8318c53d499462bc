-- Verify taskpool_crawler:link_product_images on pg

BEGIN;

SELECT 'link_product_images(bigint,jsonb)'::regprocedure;

ROLLBACK;
