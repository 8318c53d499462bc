-- Revert taskpool_crawler:forget_removed_payload_files from pg

-- Nothing to undo: deploy/forget_removed_payload_files.sql redefined forget_removed_payload_files as payload_file_removal_functions had left it.

BEGIN;
COMMIT;
