-- Revert taskpool_crawler:payload_file_removal_functions from pg

BEGIN;

DROP FUNCTION forget_removed_payload_files(text[]);
DROP FUNCTION payload_files_to_remove(integer);

COMMIT;
