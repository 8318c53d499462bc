-- Verify taskpool_crawler:image_download_dedupe_key_private on pg

BEGIN;

SELECT 1 / (NOT has_function_privilege('public', '_image_download_dedupe_key(text)', 'execute'))::integer;

ROLLBACK;
