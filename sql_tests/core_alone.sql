-- core_alone: `make test-sql` runs sql_tests/ in a database where the core's Sqitch project
-- is deployed alone (scripts/deploy --core-only), and the crawler's (crawler/sqitch/) is not:
-- no object of the crawler's is there, and the core's registry does not require one. The only
-- crawler-named things present are the rows of crawler_roles.sql, the tests' role fixture.
BEGIN;
SELECT plan(12);

SELECT hasnt_table(t, format('Should have no crawler table %s in a core-only deploy', t))
FROM unnest(ARRAY['raw_crawl_payloads', 'crawl_payload_products', 'store_products',
                  'store_product_snapshots', 'resync_plan_entries', 'payload_file_removals']) AS t;
SELECT is_empty(
    $$SELECT matviewname FROM pg_matviews WHERE schemaname = 'public'$$,
    'Should have no materialized view (the crawler''s analytics) in a core-only deploy');
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'public'::regnamespace
        AND p.proname IN ('add_store', 'apply_menu_payload', 'diff_latest_payloads', 'diff_payloads',
                          'generate_resync_plan', 'generate_resync_tasks', 'get_crawl_payload',
                          'get_dispensary', 'mark_payload_corrupt', 'record_crawl_payload',
                          'refresh_analytics', 'set_store_platform_id', 'upsert_discovered_stores',
                          'payload_files_to_remove', 'forget_removed_payload_files',
                          '_prune_policy_crawl_payloads', '_prune_policy_product_snapshots')$$,
    'Should have no crawler function in a core-only deploy');
SELECT is_empty(
    $$SELECT column_name FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name = 'dispensaries'
        AND column_name IN ('platform_dispensary_id', 'menu_url', 'city', 'first_seen_at', 'last_crawled_at')$$,
    'Should give dispensaries none of the crawler''s store columns in a core-only deploy');
SELECT is_empty(
    $$SELECT change FROM sqitch.changes WHERE project <> 'taskpool'
      UNION ALL
      SELECT dependency FROM sqitch.dependencies WHERE dependency LIKE '%:%'$$,
    'Should record only the core''s project in the Sqitch registry, with no dependency on another project');
SELECT is_empty(
    $$SELECT name FROM task_schedules$$,
    'Should ship no schedule with the core (the default schedules are the crawler''s)');
SELECT is_empty(
    $$SELECT name FROM retention_policies WHERE pruner NOT IN ('_prune_policy_tasks', '_prune_policy_attempts', '_prune_policy_workers', '_prune_policy_platform_events')$$,
    'Should have only the core''s retention policies in a core-only deploy');
SELECT * FROM finish();
ROLLBACK;
