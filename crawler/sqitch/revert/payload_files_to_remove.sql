-- Revert taskpool_crawler:payload_files_to_remove from pg

-- Back to the body of @v0.8.0, which knows payload files only.

BEGIN;
SET client_min_messages = 'warning';

-- payload_files_to_remove
-- The payload files retention deleted the rows of and that are still to be removed from disk, oldest first, at most max_files.
CREATE OR REPLACE FUNCTION payload_files_to_remove(max_files integer DEFAULT 100)
RETURNS SETOF text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT payload_files_to_remove(100);
-- The payload_file_removal handler removes each (a file already gone counts as removed), then
-- calls forget_removed_payload_files with the same paths. A path a payload row names again (its
-- file is that row's now) is never handed out: its outbox row is dropped here.
BEGIN
    IF payload_files_to_remove.max_files IS NULL OR payload_files_to_remove.max_files NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('max_files must be from 1 to 10000, not %s',
                             coalesce(payload_files_to_remove.max_files::text, 'NULL'));
    END IF;
    DELETE FROM payload_file_removals r
    USING raw_crawl_payloads p
    WHERE p.storage_path = r.storage_path;
    RETURN QUERY
        SELECT r.storage_path
        FROM payload_file_removals r
        ORDER BY r.queued_at, r.storage_path
        LIMIT payload_files_to_remove.max_files;
END;
$$;

COMMIT;
