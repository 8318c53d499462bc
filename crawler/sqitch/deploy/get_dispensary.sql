-- Deploy taskpool:get_dispensary to pg
-- requires: dispensaries_crawler_columns
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- get_dispensary
-- One store's row: the crawl handlers read its platform id and menu URL (workers cannot read the table).
CREATE FUNCTION get_dispensary(dispensary_id integer)
RETURNS dispensaries
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT platform, platform_dispensary_id, menu_url, active FROM get_dispensary(42);
-- Unknown store: P0002.
DECLARE
    v_store dispensaries;
BEGIN
    SELECT * INTO v_store FROM dispensaries d WHERE d.id = get_dispensary.dispensary_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P0002',
            MESSAGE = format('dispensary %s does not exist', coalesce(get_dispensary.dispensary_id::text, 'NULL'));
    END IF;
    RETURN v_store;
END;
$$;

REVOKE ALL ON FUNCTION get_dispensary(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION get_dispensary(integer) TO taskpool_worker;

COMMIT;
