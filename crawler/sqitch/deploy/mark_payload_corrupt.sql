-- Deploy taskpool:mark_payload_corrupt to pg
-- requires: raw_crawl_payloads
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- mark_payload_corrupt
-- Marks a saved payload whose file cannot be parsed as corrupt, keeping the error; the file stays for inspection.
CREATE FUNCTION mark_payload_corrupt(payload_id bigint, error_message text)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT mark_payload_corrupt(9, 'gzip: unexpected end of file');
-- Marking a corrupt payload again replaces its error. An applied payload cannot be marked
-- (55000): its products are in store_products already. Unknown payload: P0002. The error is
-- kept to its first 4000 characters.
DECLARE
    v_status text;
BEGIN
    IF mark_payload_corrupt.payload_id IS NULL OR mark_payload_corrupt.error_message IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'payload_id and error_message are required';
    END IF;
    IF btrim(mark_payload_corrupt.error_message) = '' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'error_message must say what is wrong with the payload, not be empty';
    END IF;

    SELECT p.status INTO v_status
    FROM raw_crawl_payloads p
    WHERE p.id = mark_payload_corrupt.payload_id
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002',
            MESSAGE = format('payload %s does not exist', mark_payload_corrupt.payload_id);
    END IF;
    IF v_status = 'applied' THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('payload %s is applied; it cannot be marked corrupt', mark_payload_corrupt.payload_id),
            HINT = 'Its products are in store_products already.';
    END IF;

    UPDATE raw_crawl_payloads p
    SET status = 'corrupt', error_message = left(mark_payload_corrupt.error_message, 4000)
    WHERE p.id = mark_payload_corrupt.payload_id;
END;
$$;

REVOKE ALL ON FUNCTION mark_payload_corrupt(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mark_payload_corrupt(bigint, text) TO taskpool_worker;

COMMIT;
