-- Deploy taskpool:refresh_analytics to pg
-- requires: mv_store_category_prices
-- requires: mv_store_freshness
-- requires: taskpool_worker

BEGIN;
SET client_min_messages = 'warning';

-- refresh_analytics
-- Refreshes the analytics materialized views and returns how many rows each holds; analytics_refresh calls it.
CREATE FUNCTION refresh_analytics()
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Example:
--   SELECT refresh_analytics();
--   -- {"mv_store_freshness": 120, "mv_store_category_prices": 845}
-- CONCURRENTLY, so readers are never blocked; it may run inside a transaction block (unlike
-- CREATE INDEX CONCURRENTLY). It cannot fill a view that holds no data yet (one made WITH NO
-- DATA, or emptied by REFRESH ... WITH NO DATA): such a view is refreshed plainly, once. Two
-- refreshes of one view take turns (EXCLUSIVE lock); the second recomputes from what the first left.
DECLARE
    v_report jsonb;
BEGIN
    IF (SELECT c.relispopulated FROM pg_class c WHERE c.oid = 'public.mv_store_category_prices'::regclass) THEN
        REFRESH MATERIALIZED VIEW CONCURRENTLY mv_store_category_prices;
    ELSE
        REFRESH MATERIALIZED VIEW mv_store_category_prices;
    END IF;
    IF (SELECT c.relispopulated FROM pg_class c WHERE c.oid = 'public.mv_store_freshness'::regclass) THEN
        REFRESH MATERIALIZED VIEW CONCURRENTLY mv_store_freshness;
    ELSE
        REFRESH MATERIALIZED VIEW mv_store_freshness;
    END IF;

    SELECT jsonb_build_object('mv_store_category_prices', (SELECT count(*) FROM mv_store_category_prices),
                              'mv_store_freshness', (SELECT count(*) FROM mv_store_freshness))
    INTO v_report;
    RETURN v_report;
END;
$$;

REVOKE ALL ON FUNCTION refresh_analytics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION refresh_analytics() TO taskpool_worker;

COMMIT;
