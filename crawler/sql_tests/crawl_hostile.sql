-- crawl_hostile: the crawler's SQL half against what a red-team pass tried (issue 11).
-- A store discovery that dies after its upsert still gets its stores their first crawl; a chained
-- task whose store was deleted mid-run completes, its link to the gone store skipped (alone and in
-- a batch); record_crawl_payload takes only the documented storage layout, for the row's store.
BEGIN;
SELECT plan(23);

/****************************************************************************/
-- upsert_discovered_stores: a retried discovery still yields the stores awaiting their first crawl

\set found '''[{"platform_store_id": "h-1", "name": "Hostile One"}, {"platform_store_id": "h-2", "name": "Hostile Two"}]'''

SELECT upsert_discovered_stores('t27', :found) AS first_ids \gset
SELECT is(cardinality(:'first_ids'::integer[]), 2, 'Should return both stores the first time');
SELECT is(upsert_discovered_stores('t27', :found), :'first_ids'::integer[],
    'Should return them again to a retried attempt: they were never crawled and have no product_discovery');

SELECT id AS store_one FROM dispensaries WHERE platform = 't27' AND platform_dispensary_id = 'h-1' \gset
SELECT id AS store_two FROM dispensaries WHERE platform = 't27' AND platform_dispensary_id = 'h-2' \gset

-- The chain the retried attempt's completion makes: one product_discovery per store.
SELECT id AS discovery_id FROM tests.make_claimed_task(worker_id := 'w1', role := 'store_discovery') \gset
SELECT status AS discovery_status
FROM complete_task(:discovery_id, 'w1', 1, tests.claim_token(:discovery_id, 1),
                   jsonb_build_object('newStoreIds', to_jsonb(upsert_discovered_stores('t27', :found)))) \gset
SELECT bag_eq(
    format($$SELECT dispensary_id FROM worker_tasks WHERE role = 'product_discovery' AND dispensary_id IN (%s, %s)$$,
           :store_one, :store_two),
    format('VALUES (%s), (%s)', :store_one, :store_two),
    'Should chain a product_discovery for each store the retried attempt found');

SELECT is(upsert_discovered_stores('t27', :found), '{}'::integer[],
    'Should not return a store whose product_discovery is queued');

-- Store one is crawled (its product_discovery ends); store two's first crawl failed for good.
SELECT count(cancel_task(id)) AS cancelled FROM worker_tasks WHERE role = 'product_discovery' AND dispensary_id IN (:store_one, :store_two) \gset
SELECT record_crawl_payload(:store_one, '2026-03-01 08:00:00+00',
    format('payloads/2026/03/01/store_%s_20260301T080000000000Z.json.gz', :store_one), 100, repeat('ab', 32)) AS crawled_p \gset
SELECT is(upsert_discovered_stores('t27', :found), ARRAY[:store_two],
    'Should return only the store never crawled once nothing is queued for it');
UPDATE dispensaries SET active = false WHERE id = :store_two;
SELECT is(upsert_discovered_stores('t27', :found), '{}'::integer[], 'Should not return an inactive store');

/****************************************************************************/
-- chaining (tg_worker_tasks__after_status_change): a chain link to a store deleted mid-run is skipped

SELECT tests.make_store(name := 'doomed') AS doomed \gset
SELECT tests.make_store(name := 'kept') AS kept \gset
SELECT id AS resync_id, attempt AS resync_attempt
FROM tests.make_claimed_task(worker_id := 'w2', role := 'product_resync', dispensary_id := :doomed, started := true) \gset
DELETE FROM dispensaries WHERE id = :doomed;
SELECT lives_ok(format($$SELECT complete_task(%s, 'w2', %s, tests.claim_token(%1$s, %2$s), '{"payload_id": 7}')$$, :resync_id, :resync_attempt),
    'Should complete a chained task whose store was deleted mid-run');
SELECT is((SELECT status FROM worker_tasks WHERE id = :resync_id), 'completed', 'Should record that task completed');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 'product_refresh' AND created_at = now()), 0::bigint,
    'Should queue no follow-up for the deleted store');

-- In a batch: the task of the deleted store and a good one both complete; the good one chains.
SELECT tests.make_store(name := 'doomed too') AS doomed_too \gset
SELECT id AS gone_id, attempt AS gone_attempt
FROM tests.make_claimed_task(worker_id := 'w3', role := 'product_resync', dispensary_id := :doomed_too, started := true) \gset
SELECT id AS good_id, attempt AS good_attempt
FROM tests.make_claimed_task(worker_id := 'w3', role := 'product_discovery', dispensary_id := :kept, started := true) \gset
DELETE FROM dispensaries WHERE id = :doomed_too;
SELECT results_eq(
    format($$SELECT task_id, status FROM complete_tasks('w3', tests.with_claim_tokens(jsonb_build_array(
                 jsonb_build_object('task_id', %s, 'attempt', %s, 'result', '{"payload_id": 8}'::jsonb),
                 jsonb_build_object('task_id', %s, 'attempt', %s, 'result', '{"payload_id": 9}'::jsonb))))$$,
           :gone_id, :gone_attempt, :good_id, :good_attempt),
    format($$VALUES (%s::bigint, 'completed'::text), (%s, 'completed')$$, :gone_id, :good_id),
    'Should complete a whole batch holding a task whose store was deleted');
SELECT results_eq(
    $$SELECT dispensary_id, payload FROM worker_tasks WHERE role = 'product_refresh' AND created_at = now()$$,
    format($$VALUES (%s, '{"payload_id": 9}'::jsonb)$$, :kept),
    'Should chain the batch''s good task only');

-- Fan-out: a store discovered then deleted before the discovery completes is skipped; the others chain.
SELECT tests.make_store(name := 'found then deleted') AS vanished \gset
DELETE FROM dispensaries WHERE id = :vanished;
SELECT id AS fan_id FROM tests.make_claimed_task(worker_id := 'w4', role := 'store_discovery') \gset
SELECT lives_ok(
    format($$SELECT complete_task(%s, 'w4', 1, tests.claim_token(%1$s, 1), '{"newStoreIds": [%s, %s]}')$$, :fan_id, :vanished, :kept),
    'Should complete a discovery one of whose new stores was deleted since');
SELECT results_eq(
    format($$SELECT dispensary_id FROM worker_tasks WHERE role = 'product_discovery' AND created_at = now()
             AND dispensary_id IS NOT NULL AND id > %s$$, :fan_id),
    format('VALUES (%s)', :kept),
    'Should chain a product_discovery for the stores still there only');

-- A store id that never was stays the worker's error: nothing completes.
SELECT id AS bogus_id FROM tests.make_claimed_task(worker_id := 'w5', role := 'store_discovery') \gset
SELECT throws_ok(
    format($$SELECT complete_task(%s, 'w5', 1, tests.claim_token(%1$s, 1), '{"newStoreIds": [2000000000]}')$$, :bogus_id),
    '23503', format('task %s chained[0]: dispensary 2000000000 does not exist', :bogus_id),
    'Should still refuse a completion naming a store that never existed');

/****************************************************************************/
-- record_crawl_payload: only payloads/YYYY/MM/DD/store_<id>_<ts>.json.gz, of the row's store

SELECT tests.make_store(name := 'payload store') AS p_store \gset
SELECT tests.make_store(name := 'other store') AS o_store \gset

CREATE FUNCTION pg_temp.record(store_id integer, path text)
RETURNS bigint
LANGUAGE sql
AS $$ SELECT record_crawl_payload(record.store_id, '2026-03-01 08:05:09+00', record.path, 100, repeat('cd', 32)); $$;

SELECT throws_ok(format($$SELECT pg_temp.record(%s, '/dev/zero')$$, :p_store),
    '22023', 'storage_path must be payloads/YYYY/MM/DD/store_<id>_<YYYYMMDD>T<HHMMSSffffff>Z.json.gz, relative to the storage directory, not ''/dev/zero''',
    'Should refuse an absolute path');
SELECT throws_ok(format($$SELECT pg_temp.record(%s, '../../etc/shadow')$$, :p_store),
    '22023', NULL, 'Should refuse a path climbing out of the storage directory');
SELECT throws_ok(
    format($$SELECT pg_temp.record(%s, 'payloads/2026/03/01/../../../../../etc/store_%s_20260301T080509000000Z.json.gz')$$,
           :p_store, :p_store),
    '22023', NULL, 'Should refuse a layout path with .. in it');
SELECT throws_ok(
    format($$SELECT pg_temp.record(%s, E'payloads/2026/03/01/store_%s_20260301T080509000000Z.json.gz\n')$$,
           :p_store, :p_store),
    '22023', NULL, 'Should refuse a layout path with a trailing newline');
SELECT throws_ok(
    format($$SELECT pg_temp.record(%s, 'payloads/2026/03/02/store_%s_20260301T080509000000Z.json.gz')$$,
           :p_store, :p_store),
    '22023', NULL, 'Should refuse a path whose day directory is not its timestamp''s day');
SELECT throws_ok(
    format($$SELECT pg_temp.record(%s, 'payloads/2026/03/01/store_%s_20260301T080509000000Z.json.gz')$$,
           :p_store, :o_store),
    '22023',
    format('storage_path %L is a payload of store %s, not of dispensary %s',
           format('payloads/2026/03/01/store_%s_20260301T080509000000Z.json.gz', :o_store), :o_store, :p_store),
    'Should refuse a path naming another store');
SELECT is((SELECT count(*) FROM raw_crawl_payloads WHERE dispensary_id IN (:p_store, :o_store)), 0::bigint,
    'Should record nothing for the refused paths');
SELECT lives_ok(
    format($$SELECT pg_temp.record(%s, 'payloads/2026/03/01/store_%s_20260301T080509123456Z.json.gz')$$,
           :p_store, :p_store),
    'Should record a path of the documented layout');
SELECT is((SELECT count(*) FROM raw_crawl_payloads WHERE dispensary_id = :p_store), 1::bigint,
    'Should have recorded it');

SELECT * FROM finish();
ROLLBACK;
