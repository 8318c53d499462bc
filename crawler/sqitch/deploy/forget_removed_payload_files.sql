-- Deploy taskpool_crawler:forget_removed_payload_files to pg
-- requires: payload_file_removal_functions

-- forget_removed_payload_files's home: its live body, unchanged from payload_file_removal_functions.
-- Change forget_removed_payload_files here, with `sqitch rework forget_removed_payload_files`.

BEGIN;
SET client_min_messages = 'warning';

-- forget_removed_payload_files
-- Takes the files removed from disk out of payload_file_removals; returns how many rows went.
CREATE OR REPLACE FUNCTION forget_removed_payload_files(storage_paths text[])
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

COMMIT;
