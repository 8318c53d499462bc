-- Verify taskpool_crawler:payload_files_to_remove on pg

BEGIN;

SELECT 'payload_files_to_remove(integer)'::regprocedure;

ROLLBACK;
