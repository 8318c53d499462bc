-- Deploy taskpool:diff_latest_payloads to pg
-- requires: diff_payloads

BEGIN;
SET client_min_messages = 'warning';

-- diff_latest_payloads
-- The diff between a store's two newest applied payloads (by fetched_at): what its last crawl changed.
CREATE FUNCTION diff_latest_payloads(dispensary_id integer)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
AS $$
-- Example:
--   SELECT diff_latest_payloads(42) -> 'diff';
--   -- {"added": 1, "removed": 0, "priceChanges": 3, "stockChanges": 7}
-- The shape is diff_payloads'. Unknown store: P0002; fewer than two applied payloads: 55000.
DECLARE
    v_ids bigint[];
BEGIN
    IF diff_latest_payloads.dispensary_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'dispensary_id is required';
    END IF;
    IF NOT EXISTS (SELECT FROM dispensaries d WHERE d.id = diff_latest_payloads.dispensary_id) THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002', MESSAGE = format('dispensary %s does not exist', diff_latest_payloads.dispensary_id);
    END IF;

    SELECT array_agg(l.id ORDER BY l.fetched_at DESC, l.id DESC) INTO v_ids
    FROM (SELECT p.id, p.fetched_at
          FROM raw_crawl_payloads p
          WHERE p.dispensary_id = diff_latest_payloads.dispensary_id AND p.status = 'applied'
          ORDER BY p.fetched_at DESC, p.id DESC
          LIMIT 2) AS l;
    IF coalesce(cardinality(v_ids), 0) < 2 THEN
        RAISE EXCEPTION USING
            ERRCODE = '55000',
            MESSAGE = format('dispensary %s has %s applied payload%s; a diff needs two',
                             diff_latest_payloads.dispensary_id, coalesce(cardinality(v_ids), 0),
                             CASE WHEN cardinality(v_ids) = 1 THEN '' ELSE 's' END),
            HINT = 'Each product_refresh applies one; wait for the next crawl.';
    END IF;
    RETURN diff_payloads(v_ids[2], v_ids[1]);
END;
$$;

REVOKE ALL ON FUNCTION diff_latest_payloads(integer) FROM PUBLIC;

COMMIT;
