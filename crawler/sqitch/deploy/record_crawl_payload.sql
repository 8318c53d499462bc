-- Deploy taskpool:record_crawl_payload to pg
-- requires: raw_crawl_payloads
-- requires: dispensaries_crawler_columns
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- record_crawl_payload
-- Records a menu payload saved to disk (status saved) and returns its id; the store's last_crawled_at moves on.
-- Only a path of the documented layout, naming the row's store, is taken: product_refresh reads it.
CREATE OR REPLACE FUNCTION record_crawl_payload(
    dispensary_id integer,
    fetched_at    timestamptz,
    storage_path  text,
    size_bytes    integer,
    sha256        text)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT record_crawl_payload(42, '2026-03-01T08:00:00Z',
--       'payloads/2026/03/01/store_42_20260301T080000Z.json.gz', 18234, '9f86d0...0f00a08');
-- product_resync calls it once the file is written; product_refresh then applies the payload
-- (apply_menu_payload). Recording the same file again (same path, store, size and checksum:
-- a retried call) returns the first id; the same path with anything else is 23505. Unknown
-- store: P0002. sha256 is stored lower-case.
-- storage_path must be payloads/YYYY/MM/DD/store_<id>_<YYYYMMDD>T<HHMMSSffffff>Z.json.gz, as
-- pyworker.crawler.storage writes it: relative to the storage directory, its day directory the
-- day of its timestamp, <id> this dispensary_id. Anything else (an absolute path, '..', another
-- store's file) is 22023: a worker session must not point product_refresh at any other file.
DECLARE
    v_sha256 text := lower(record_crawl_payload.sha256);
    v_layout text[] := regexp_match(record_crawl_payload.storage_path,
        '^payloads/([0-9]{4})/([0-9]{2})/([0-9]{2})/store_([0-9]{1,10})_([0-9]{8})T[0-9]{12}Z\.json\.gz$');
    v_known  raw_crawl_payloads;
    v_id     bigint;
BEGIN
    IF record_crawl_payload.dispensary_id IS NULL OR record_crawl_payload.fetched_at IS NULL
       OR record_crawl_payload.storage_path IS NULL OR record_crawl_payload.size_bytes IS NULL
       OR record_crawl_payload.sha256 IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22004',
            MESSAGE = 'dispensary_id, fetched_at, storage_path, size_bytes and sha256 are all required';
    END IF;
    IF btrim(record_crawl_payload.storage_path) = '' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'storage_path must not be empty';
    END IF;
    IF v_layout IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('storage_path must be payloads/YYYY/MM/DD/store_<id>_<YYYYMMDD>T<HHMMSSffffff>Z.json.gz,'
                             ' relative to the storage directory, not %L', left(record_crawl_payload.storage_path, 200));
    END IF;
    IF v_layout[1] || v_layout[2] || v_layout[3] <> v_layout[5] THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('storage_path %L is stamped %s but lies in the directory of %s/%s/%s',
                             record_crawl_payload.storage_path, v_layout[5], v_layout[1], v_layout[2], v_layout[3]);
    END IF;
    IF v_layout[4] <> record_crawl_payload.dispensary_id::text THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('storage_path %L is a payload of store %s, not of dispensary %s',
                             record_crawl_payload.storage_path, v_layout[4], record_crawl_payload.dispensary_id);
    END IF;
    IF record_crawl_payload.size_bytes <= 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('size_bytes must be positive, not %s', record_crawl_payload.size_bytes);
    END IF;
    IF v_sha256 !~ '^[0-9a-f]{64}$' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('sha256 must be 64 hex digits, not %L', left(record_crawl_payload.sha256, 80));
    END IF;

    PERFORM FROM dispensaries d WHERE d.id = record_crawl_payload.dispensary_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002',
            MESSAGE = format('dispensary %s does not exist', record_crawl_payload.dispensary_id);
    END IF;

    INSERT INTO raw_crawl_payloads (dispensary_id, fetched_at, storage_path, size_bytes, sha256)
    VALUES (record_crawl_payload.dispensary_id, record_crawl_payload.fetched_at, record_crawl_payload.storage_path,
            record_crawl_payload.size_bytes, v_sha256)
    ON CONFLICT ON CONSTRAINT raw_crawl_payloads_one_per_storage_path DO NOTHING
    RETURNING id INTO v_id;

    IF v_id IS NULL THEN
        SELECT * INTO v_known FROM raw_crawl_payloads p WHERE p.storage_path = record_crawl_payload.storage_path;
        IF (v_known.dispensary_id, v_known.fetched_at, v_known.size_bytes, v_known.sha256)
           IS DISTINCT FROM (record_crawl_payload.dispensary_id, record_crawl_payload.fetched_at,
                             record_crawl_payload.size_bytes, v_sha256) THEN
            RAISE EXCEPTION USING
                ERRCODE = '23505',
                MESSAGE = format('storage_path %L is recorded already, as payload %s of dispensary %s',
                                 record_crawl_payload.storage_path, v_known.id, v_known.dispensary_id),
                HINT = 'Each payload file gets its own path (payloads/YYYY/MM/DD/store_<id>_<ts>.json.gz).';
        END IF;
        RETURN v_known.id;
    END IF;

    -- greatest(): a payload recorded late (fetched before the newest one) does not move it back.
    UPDATE dispensaries d
    SET last_crawled_at = greatest(d.last_crawled_at, record_crawl_payload.fetched_at)
    WHERE d.id = record_crawl_payload.dispensary_id;

    RETURN v_id;
END;
$$;

REVOKE ALL ON FUNCTION record_crawl_payload(integer, timestamptz, text, integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION record_crawl_payload(integer, timestamptz, text, integer, text) TO taskpool_worker;

COMMIT;
