-- Deploy taskpool_crawler:unrecorded_payload_paths to pg
-- requires: raw_crawl_payloads
-- requires: taskpool:taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- unrecorded_payload_paths
-- Those of the given storage paths that no payload row names: stored objects whose row never came, which the storage sweep removes.
CREATE FUNCTION unrecorded_payload_paths(storage_paths text[])
RETURNS SETOF text
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT unrecorded_payload_paths(ARRAY['payloads/2026/01/01/store_1_20260101T000000000000Z.json.gz']);
-- A payload is stored before its row is recorded; a worker killed in between leaves an object
-- no row names. The payload_storage_sweep handler lists the storage's old objects and asks this
-- which to remove. A path in the payload_file_removals outbox has no row either: removing it
-- early is what the outbox would do (it counts a file already gone as removed).
BEGIN
    IF unrecorded_payload_paths.storage_paths IS NULL
       OR array_position(unrecorded_payload_paths.storage_paths, NULL) IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'storage_paths must be an array of paths, without NULLs';
    END IF;
    IF cardinality(unrecorded_payload_paths.storage_paths) > 10000 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('storage_paths may hold at most 10000 paths, not %s',
                             cardinality(unrecorded_payload_paths.storage_paths));
    END IF;
    RETURN QUERY
        SELECT DISTINCT listed.path
        FROM unnest(unrecorded_payload_paths.storage_paths) AS listed(path)
        WHERE NOT EXISTS (SELECT FROM raw_crawl_payloads p WHERE p.storage_path = listed.path)
        ORDER BY listed.path;
END;
$$;

COMMENT ON FUNCTION unrecorded_payload_paths(text[]) IS $$Those of the given storage paths that no payload row names: stored objects whose row never came, which the storage sweep removes.
Example:
  SELECT unrecorded_payload_paths(ARRAY['payloads/2026/01/01/store_1_20260101T000000000000Z.json.gz']);$$;

REVOKE ALL ON FUNCTION unrecorded_payload_paths(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION unrecorded_payload_paths(text[]) TO taskpool_worker;

COMMIT;
