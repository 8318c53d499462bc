-- Verify taskpool:crawler_catalog_comments on pg

BEGIN;

-- Raises naming each routine whose comment is missing or has no example (a missing routine raises too).
DO $$
DECLARE
    v_missing text;
BEGIN
    SELECT string_agg(r.signature, ', ') INTO v_missing
    FROM unnest(ARRAY[
        'add_store(text, text, text, text, text)',
        'apply_menu_payload(bigint, jsonb)',
        'diff_latest_payloads(integer)',
        'diff_payloads(bigint, bigint)',
        'generate_resync_plan(integer, date, text, integer)',
        'generate_resync_tasks(integer, date, text, integer)',
        'get_crawl_payload(bigint)',
        'get_dispensary(integer)',
        'mark_payload_corrupt(bigint, text)',
        'record_crawl_payload(integer, timestamptz, text, integer, text)',
        'refresh_analytics()',
        'set_store_platform_id(integer, text)',
        'upsert_discovered_stores(text, jsonb)'
    ]) AS r(signature)
    WHERE coalesce(obj_description(r.signature::regprocedure, 'pg_proc'), '') NOT LIKE '%Example:%';
    IF v_missing IS NOT NULL THEN
        RAISE EXCEPTION 'no COMMENT with an example on %', v_missing;
    END IF;
END $$;

ROLLBACK;
