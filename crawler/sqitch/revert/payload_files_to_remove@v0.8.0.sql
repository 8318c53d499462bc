-- Revert taskpool_crawler:payload_files_to_remove from pg

-- Nothing to undo: deploy/payload_files_to_remove.sql redefined payload_files_to_remove as payload_file_removal_functions had left it.

BEGIN;
COMMIT;
