-- Verify taskpool_crawler:payload_files_to_remove on pg

BEGIN;

SELECT 'payload_files_to_remove(integer)'::regprocedure;
SELECT 1 / count(*) FROM pg_proc WHERE proname = 'payload_files_to_remove' AND prosrc LIKE '%product_images%';

ROLLBACK;
