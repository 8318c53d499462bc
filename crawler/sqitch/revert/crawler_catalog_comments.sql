-- Revert taskpool:crawler_catalog_comments from pg

BEGIN;
SET client_min_messages = 'warning';

-- The comments their own changes set come back; the others go.
COMMENT ON FUNCTION add_store(text, text, text, text, text) IS 
    'Adds a store by hand, active from now on; returns its row, so its id is what tasks name as dispensary_id.';
COMMENT ON FUNCTION apply_menu_payload(bigint, jsonb) IS NULL;
COMMENT ON FUNCTION diff_latest_payloads(integer) IS NULL;
COMMENT ON FUNCTION diff_payloads(bigint, bigint) IS NULL;
COMMENT ON FUNCTION generate_resync_plan(integer, date, text, integer) IS NULL;
COMMENT ON FUNCTION generate_resync_tasks(integer, date, text, integer) IS NULL;
COMMENT ON FUNCTION get_crawl_payload(bigint) IS NULL;
COMMENT ON FUNCTION get_dispensary(integer) IS NULL;
COMMENT ON FUNCTION mark_payload_corrupt(bigint, text) IS NULL;
COMMENT ON FUNCTION record_crawl_payload(integer, timestamptz, text, integer, text) IS NULL;
COMMENT ON FUNCTION refresh_analytics() IS NULL;
COMMENT ON FUNCTION set_store_platform_id(integer, text) IS NULL;
COMMENT ON FUNCTION upsert_discovered_stores(text, jsonb) IS NULL;

COMMIT;
