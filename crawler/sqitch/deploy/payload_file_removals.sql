-- Deploy taskpool_crawler:payload_file_removals to pg
-- requires: crawler_roles
-- requires: taskpool:taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- payload_file_removals
-- The outbox of payload files to remove: a payload row that retention deletes leaves its file's path here, in the same transaction.
CREATE TABLE payload_file_removals (
    storage_path  text        PRIMARY KEY,
    payload_id    bigint      NOT NULL,
    queued_at     timestamptz NOT NULL DEFAULT taskpool_now()
);

COMMENT ON TABLE payload_file_removals IS
    'Payload files whose rows are gone and which are still to be removed from disk. The database cannot '
    'reach the files: a payload_file_removal task (a crawler worker) removes each file, then its row '
    '(forget_removed_payload_files); a file already gone counts as removed. So a crash between the row and '
    'the file, or between the file and this row, leaves a row here that the next run finishes.';
COMMENT ON COLUMN payload_file_removals.storage_path IS
    'raw_crawl_payloads.storage_path of the deleted payload, relative to the storage directory.';
COMMENT ON COLUMN payload_file_removals.payload_id IS 'The id the deleted payload had, for the record.';

-- The role whose tasks remove them: enqueued by the payload retention policy, one at a time
-- (its dedupe key), served by a crawler worker, which has the storage directory.
INSERT INTO task_roles (role, description, requires_store, max_retries, stale_threshold, backoff_base, backoff_cap) VALUES
    ('payload_file_removal', 'Remove the files of the payloads retention deleted', false, 10, '10 minutes', '1 minute', '1 hour')
ON CONFLICT (role) DO NOTHING;

COMMIT;
