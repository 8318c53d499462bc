-- Deploy taskpool:get_crawl_payload to pg
-- requires: raw_crawl_payloads
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- get_crawl_payload
-- One payload's row: product_refresh reads where its file lies and its checksum (workers cannot read the table).
CREATE FUNCTION get_crawl_payload(payload_id bigint)
RETURNS raw_crawl_payloads
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT dispensary_id, storage_path, sha256, status FROM get_crawl_payload(9);
-- Unknown payload: P0002.
DECLARE
    v_payload raw_crawl_payloads;
BEGIN
    SELECT * INTO v_payload FROM raw_crawl_payloads p WHERE p.id = get_crawl_payload.payload_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002',
            MESSAGE = format('payload %s does not exist', coalesce(get_crawl_payload.payload_id::text, 'NULL'));
    END IF;
    RETURN v_payload;
END;
$$;

REVOKE ALL ON FUNCTION get_crawl_payload(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION get_crawl_payload(bigint) TO taskpool_worker;

COMMIT;
