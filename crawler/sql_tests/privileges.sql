-- The crawler's privileges: taskpool_worker executes the crawl handlers' functions and no other
-- crawler function; PUBLIC executes none. (sql_tests/privileges.sql checks the core's, in a
-- database with the core alone.)
BEGIN;
SELECT plan(3);

CREATE ROLE tp_crawler_nobody;

-- The crawler's callable functions: those of the schema that a core-only deploy does not have.
CREATE TEMP VIEW crawler_functions AS
SELECT p.oid, p.proname::text COLLATE "default" AS proname
FROM pg_proc p
WHERE p.pronamespace = 'public'::regnamespace
  AND p.prorettype <> 'trigger'::regtype
  AND p.proname IN ('upsert_discovered_stores', 'record_crawl_payload', 'mark_payload_corrupt',
                    'get_crawl_payload', 'get_dispensary', 'apply_menu_payload', 'diff_payloads',
                    'diff_latest_payloads', 'refresh_analytics', 'set_store_platform_id', 'add_store',
                    'generate_resync_tasks', 'generate_resync_plan');

SELECT results_eq(
    $$SELECT proname FROM crawler_functions
      WHERE has_function_privilege('taskpool_worker', oid, 'EXECUTE') ORDER BY proname$$,
    $$VALUES ('apply_menu_payload'), ('get_crawl_payload'), ('get_dispensary'), ('mark_payload_corrupt'),
             ('record_crawl_payload'), ('refresh_analytics'), ('set_store_platform_id'),
             ('upsert_discovered_stores')$$,
    'Should let taskpool_worker execute exactly the crawl handlers'' functions of the crawler');
SELECT is_empty(
    $$SELECT oid::regprocedure::text FROM crawler_functions WHERE has_function_privilege('tp_crawler_nobody', oid, 'EXECUTE')$$,
    'Should let PUBLIC execute none of the crawler''s functions');
SELECT is((SELECT count(DISTINCT proname) FROM crawler_functions), 13::bigint,
    'Should have checked all thirteen public functions of the crawler');

SELECT * FROM finish();
ROLLBACK;
