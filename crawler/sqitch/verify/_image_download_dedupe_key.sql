-- Verify taskpool_crawler:_image_download_dedupe_key on pg

BEGIN;

SELECT '_image_download_dedupe_key(text)'::regprocedure;

ROLLBACK;
