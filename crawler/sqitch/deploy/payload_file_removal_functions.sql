-- Deploy taskpool_crawler:payload_file_removal_functions to pg
-- requires: payload_file_removals
-- requires: raw_crawl_payloads
-- requires: taskpool:taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- payload_files_to_remove
-- The payload files retention deleted the rows of and that are still to be removed from disk, oldest first, at most max_files.
CREATE FUNCTION payload_files_to_remove(max_files integer DEFAULT 100)
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

-- forget_removed_payload_files
-- Takes the files removed from disk out of payload_file_removals; returns how many rows went.
CREATE FUNCTION forget_removed_payload_files(storage_paths text[])
RETURNS integer
LANGUAGE sql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- Example:
    --   SELECT forget_removed_payload_files(ARRAY['payloads/2026/01/01/store_1_20260101T000000000000Z.json.gz']);
    -- A path not queued is ignored: a repeated call whose answer was lost changes nothing.
    WITH gone AS (
        DELETE FROM payload_file_removals r
        WHERE r.storage_path = ANY (coalesce(forget_removed_payload_files.storage_paths, '{}'))
        RETURNING 1
    )
    SELECT count(*)::integer FROM gone;
$$;

COMMENT ON FUNCTION payload_files_to_remove(integer) IS $$The payload files retention deleted the rows of and that are still to be removed from disk, oldest first, at most max_files.
Example:
  SELECT payload_files_to_remove(100);$$;
COMMENT ON FUNCTION forget_removed_payload_files(text[]) IS $$Takes the files removed from disk out of payload_file_removals; returns how many rows went.
Example:
  SELECT forget_removed_payload_files(ARRAY['payloads/2026/01/01/store_1_20260101T000000000000Z.json.gz']);$$;

REVOKE ALL ON FUNCTION payload_files_to_remove(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION forget_removed_payload_files(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION payload_files_to_remove(integer) TO taskpool_worker;
GRANT EXECUTE ON FUNCTION forget_removed_payload_files(text[]) TO taskpool_worker;

COMMIT;
