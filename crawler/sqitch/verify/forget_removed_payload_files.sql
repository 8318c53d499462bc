-- Verify taskpool_crawler:forget_removed_payload_files on pg

BEGIN;

SELECT 'forget_removed_payload_files(text[])'::regprocedure;

ROLLBACK;
