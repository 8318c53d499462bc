-- retention: the crawler's retention policies, through the core's interface (rows of
-- retention_policies naming the crawler's pruners): payload rows, whose files go into the
-- payload_file_removals outbox for a payload_file_removal task, and snapshots. Removing the files
-- (and a crash between the row and the file) is crawler/tests/test_crawler_retention.py.
BEGIN;
SELECT plan(28);

/****************************************************************************/
-- structure

SELECT results_eq(
    $$SELECT name, pruner, keep, enabled FROM retention_policies
      WHERE name IN ('crawl_payloads', 'product_snapshots') ORDER BY name$$,
    $$VALUES ('crawl_payloads', '_prune_policy_crawl_payloads', interval '30 days', true),
             ('product_snapshots', '_prune_policy_product_snapshots', interval '365 days', true)$$,
    'Should add the crawler''s policies: payloads 30 days, snapshots 365 days');
SELECT has_table('public', 'payload_file_removals', 'Should have the outbox payload_file_removals');
SELECT ok(EXISTS (SELECT FROM task_roles WHERE role = 'payload_file_removal' AND NOT requires_store),
    'Should have the role payload_file_removal, which needs no store');
SELECT ok(has_function_privilege('taskpool_worker', 'payload_files_to_remove(integer)', 'EXECUTE')
          AND has_function_privilege('taskpool_worker', 'forget_removed_payload_files(text[])', 'EXECUTE'),
    'Should let a crawler worker read and empty the outbox');
SELECT ok(NOT has_table_privilege('taskpool_worker', 'payload_file_removals', 'SELECT'),
    'Should give taskpool_worker no access to the outbox table itself');

/****************************************************************************/
-- fixtures: a store with five applied payloads (four old), one old saved, one old corrupt

INSERT INTO dispensaries (name, platform) VALUES ('t53 Store', 't53'), ('t53 Other', 't53');
SELECT id AS store FROM dispensaries WHERE name = 't53 Store' \gset
SELECT id AS other FROM dispensaries WHERE name = 't53 Other' \gset
CREATE FUNCTION pg_temp.saved(store_id integer, fetched_at timestamptz)
RETURNS bigint
LANGUAGE sql
AS $$
    SELECT record_crawl_payload(saved.store_id, saved.fetched_at,
        format('payloads/%s/store_%s_%sZ.json.gz', to_char(saved.fetched_at AT TIME ZONE 'UTC', 'YYYY/MM/DD'),
               saved.store_id, to_char(saved.fetched_at AT TIME ZONE 'UTC', 'YYYYMMDD"T"HH24MISSUS')),
        100, encode(sha256(convert_to(saved.fetched_at::text, 'UTF8')), 'hex'));
$$;
CREATE TEMP TABLE t53 (name text PRIMARY KEY, id bigint);
INSERT INTO t53 VALUES
    ('applied_60d', pg_temp.saved(:store, now() - interval '60 days')),
    ('saved_55d',   pg_temp.saved(:store, now() - interval '55 days')),
    ('applied_50d', pg_temp.saved(:store, now() - interval '50 days')),
    ('corrupt_45d', pg_temp.saved(:store, now() - interval '45 days')),
    ('applied_40d', pg_temp.saved(:store, now() - interval '40 days')),
    ('applied_35d', pg_temp.saved(:store, now() - interval '35 days')),
    ('applied_1d',  pg_temp.saved(:store, now() - interval '1 day')),
    -- the other store's only applied payload is old: it stays, as its newest
    ('other_90d',   pg_temp.saved(:other, now() - interval '90 days'));
SELECT count(apply_menu_payload(id, '[{"id": "a", "name": "A", "price": 10, "stock": 1}]'))
FROM t53 WHERE name LIKE 'applied%' OR name = 'other_90d';
SELECT mark_payload_corrupt((SELECT id FROM t53 WHERE name = 'corrupt_45d'), 'not gzip');
CREATE FUNCTION pg_temp.kept() RETURNS text[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg(x.name ORDER BY x.name), '{}') FROM t53 x JOIN raw_crawl_payloads p ON p.id = x.id;
$$;
SELECT (SELECT storage_path FROM raw_crawl_payloads WHERE id = (SELECT id FROM t53 WHERE name = 'applied_60d')) AS path_60d \gset

/****************************************************************************/
-- crawl_payloads: older than 30 days, but each store's two newest applied

SELECT is((SELECT would_prune FROM count_retention() WHERE policy = 'crawl_payloads'), 5::bigint,
    'Should count the old payloads but the two newest applied of each store');
SELECT is(cardinality(pg_temp.kept()), 8, 'Should have deleted nothing while counting');
SELECT set_retention_policy('crawl_payloads', batch_size := 3) IS NOT NULL AS set \gset
SELECT results_eq(
    $$SELECT pruned, finished FROM apply_retention() WHERE policy = 'crawl_payloads'$$,
    $$VALUES (3::bigint, false)$$,
    'Should prune one batch, oldest first');
SELECT is(pg_temp.kept(), ARRAY['applied_1d', 'applied_35d', 'applied_40d', 'corrupt_45d', 'other_90d'],
    'Should prune the oldest three (applied, saved, applied)');
SELECT is((SELECT count(*) FROM payload_file_removals), 3::bigint,
    'Should queue each deleted payload''s file in the outbox, in the same transaction');
SELECT ok(EXISTS (SELECT FROM payload_file_removals WHERE storage_path = :'path_60d'),
    'Should queue the file by its storage_path');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 'payload_file_removal' AND status = 'pending'), 1::bigint,
    'Should enqueue a payload_file_removal task to remove the files');
SELECT results_eq(
    $$SELECT pruned, finished FROM apply_retention(5) WHERE policy = 'crawl_payloads'$$,
    $$VALUES (2::bigint, true)$$,
    'Should prune the rest in the next call');
SELECT is(pg_temp.kept(), ARRAY['applied_1d', 'applied_35d', 'other_90d'],
    'Should keep the two newest applied payloads of each store, however old, and the young ones');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 'payload_file_removal'), 1::bigint,
    'Should enqueue no second removal task while one is pending');
SELECT is((SELECT count(*) FROM crawl_payload_products WHERE payload_id IN (SELECT id FROM t53 WHERE name = 'applied_60d')),
    0::bigint, 'Should take a deleted payload''s products with it');

/****************************************************************************/
-- payload_files_to_remove, forget_removed_payload_files: the worker's side of the outbox

SELECT is((SELECT count(*) FROM payload_files_to_remove(100)), 5::bigint, 'Should hand out every queued file');
SELECT is((SELECT count(*) FROM payload_files_to_remove(2)), 2::bigint, 'Should hand out at most max_files');
SELECT is(forget_removed_payload_files(ARRAY[:'path_60d']), 1, 'Should forget a removed file');
SELECT is(forget_removed_payload_files(ARRAY[:'path_60d']), 0, 'Should forget nothing the second time');
SELECT ok(NOT EXISTS (SELECT FROM payload_files_to_remove(100) p WHERE p = :'path_60d'),
    'Should no longer hand out a forgotten file');
-- a path a payload row names again (recorded anew) is that row's file: never handed out
INSERT INTO payload_file_removals (storage_path, payload_id)
SELECT storage_path, id FROM raw_crawl_payloads WHERE id = (SELECT id FROM t53 WHERE name = 'applied_1d');
SELECT ok(NOT EXISTS (SELECT FROM payload_files_to_remove(100) p
                      JOIN raw_crawl_payloads r ON r.storage_path = p),
    'Should never hand out the file of a payload row that exists');
SELECT throws_ok($$SELECT payload_files_to_remove(0)$$, '22023', 'max_files must be from 1 to 10000, not 0',
    'Should refuse max_files 0');
SELECT throws_ok($$SELECT payload_files_to_remove(NULL)$$, '22023', 'max_files must be from 1 to 10000, not NULL',
    'Should refuse a NULL max_files');
SELECT is(forget_removed_payload_files(NULL), 0, 'Should forget nothing for NULL');

/****************************************************************************/
-- product_snapshots: by captured_at

UPDATE store_product_snapshots SET captured_at = now() - interval '400 days'
WHERE payload_id IS NULL;
SELECT is((SELECT would_prune FROM count_retention() WHERE policy = 'product_snapshots'),
    (SELECT count(*) FROM store_product_snapshots WHERE captured_at < now() - interval '365 days'),
    'Should count the snapshots captured more than a year ago');
SELECT cmp_ok((SELECT pruned FROM apply_retention() WHERE policy = 'product_snapshots'), '>', 0::bigint,
    'Should prune them');
SELECT is((SELECT count(*) FROM store_product_snapshots WHERE captured_at < now() - interval '365 days'), 0::bigint,
    'Should leave no snapshot older than a year');

SELECT * FROM finish();
ROLLBACK;
