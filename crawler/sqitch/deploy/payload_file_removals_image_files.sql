-- Deploy taskpool_crawler:payload_file_removals_image_files to pg
-- requires: payload_file_removals

BEGIN;
SET client_min_messages = 'warning';

-- Image files leave the disk the way payload files do: retention deletes the row and queues the
-- file here, and the payload_file_removal task removes it.
ALTER TABLE payload_file_removals ALTER COLUMN payload_id DROP NOT NULL;

COMMENT ON TABLE payload_file_removals IS
    'Stored files (payloads, and product images) whose rows are gone and which are still to be removed from '
    'disk. The database cannot reach the files: a payload_file_removal task (a crawler worker) removes each '
    'file, then its row (forget_removed_payload_files); a file already gone counts as removed. So a crash '
    'between the row and the file, or between the file and this row, leaves a row here that the next run finishes.';
COMMENT ON COLUMN payload_file_removals.payload_id IS 'The id the deleted payload had, for the record; NULL for a product image''s file.';
COMMENT ON COLUMN payload_file_removals.storage_path IS
    'The deleted row''s storage key, relative to the storage directory: raw_crawl_payloads.storage_path, or '
    'product_images.storage_key.';

COMMIT;
