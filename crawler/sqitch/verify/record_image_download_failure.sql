-- Verify taskpool_crawler:record_image_download_failure on pg

BEGIN;

SELECT 'record_image_download_failure(text,text)'::regprocedure;

ROLLBACK;
