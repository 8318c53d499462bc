-- Verify taskpool_crawler:record_product_image on pg

BEGIN;

SELECT 'record_product_image(text,text,text,integer,text)'::regprocedure;

ROLLBACK;
