-- Verify taskpool_crawler:payload_file_removals_image_files on pg

BEGIN;

SELECT 1 / count(*) FROM pg_attribute
WHERE attrelid = 'payload_file_removals'::regclass AND attname = 'payload_id' AND NOT attnotnull;

ROLLBACK;
