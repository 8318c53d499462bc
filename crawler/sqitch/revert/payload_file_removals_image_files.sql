-- Revert taskpool_crawler:payload_file_removals_image_files from pg

BEGIN;

-- Image files still queued are left on disk: the payload_storage_sweep never removes images.
DELETE FROM payload_file_removals WHERE payload_id IS NULL;
ALTER TABLE payload_file_removals ALTER COLUMN payload_id SET NOT NULL;
COMMENT ON TABLE payload_file_removals IS
    'Payload files whose rows are gone and which are still to be removed from disk. The database cannot '
    'reach the files: a payload_file_removal task (a crawler worker) removes each file, then its row '
    '(forget_removed_payload_files); a file already gone counts as removed. So a crash between the row and '
    'the file, or between the file and this row, leaves a row here that the next run finishes.';
COMMENT ON COLUMN payload_file_removals.storage_path IS
    'raw_crawl_payloads.storage_path of the deleted payload, relative to the storage directory.';
COMMENT ON COLUMN payload_file_removals.payload_id IS 'The id the deleted payload had, for the record.';

COMMIT;
