-- 27_crawler_hostile: the crawler's SQL half against what a red-team pass tried (issue 11).
-- A store discovery that dies after its upsert still gets its stores their first crawl; a chained
-- task whose store was deleted mid-run completes, its link to the gone store skipped (alone and in
-- a batch); record_crawl_payload takes only the documented storage layout, for the row's store.
BEGIN;
SELECT plan(6);

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
FROM complete_task(:discovery_id, 'w1', 1,
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

SELECT * FROM finish();
ROLLBACK;
