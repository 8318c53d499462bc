-- retention_images_and_plans: the crawler's retention of product images (URLs no product has
-- shown for the keep, marked by the store_product_images triggers, and the stored images only
-- they named, whose files go through payload_file_removals) and of resync_plan_entries.
BEGIN;
SELECT plan(24);

SELECT results_eq(
    $$SELECT name, pruner, keep, enabled FROM retention_policies
      WHERE name IN ('product_images', 'resync_plan_entries') ORDER BY name$$,
    $$VALUES ('product_images', '_prune_policy_product_images', interval '90 days', true),
             ('resync_plan_entries', '_prune_policy_resync_plan_entries', interval '30 days', true)$$,
    'Should add the policies for images (90 days unlinked) and plan entries (30 days)');
-- Only the policy under test runs.
UPDATE retention_policies SET enabled = false;

/****************************************************************************/
-- fixtures: a store whose menu shows three products

INSERT INTO dispensaries (name, platform) VALUES ('t29 Store', 't29');
SELECT id AS store FROM dispensaries WHERE name = 't29 Store' \gset
SELECT record_crawl_payload(:store, timestamptz '2026-01-02 03:04:05.000006+00',
    format('payloads/2026/01/02/store_%s_20260102T030405000006Z.json.gz', :store), 100, repeat('0', 64)) AS payload \gset
SELECT apply_menu_payload(:payload,
    '[{"id": "a", "name": "A", "price": 1, "stock": 1},
      {"id": "b", "name": "B", "price": 2, "stock": 2},
      {"id": "c", "name": "C", "price": 3, "stock": 3}]') IS NOT NULL AS applied \gset
CREATE FUNCTION pg_temp.unlinked_at(url text) RETURNS timestamptz LANGUAGE sql AS $$
    SELECT unlinked_at FROM product_image_urls WHERE image_url = url;
$$;
CREATE FUNCTION pg_temp.age_unlinked(url text, age interval) RETURNS void LANGUAGE sql AS $$
    UPDATE product_image_urls SET unlinked_at = taskpool_now() - age WHERE image_url = url;
$$;

SELECT link_product_images(:payload,
    '[{"id": "a", "image_url": "http://img.t29/kept.png"},
      {"id": "b", "image_url": "http://img.t29/gone.png"},
      {"id": "c", "image_url": "http://img.t29/twin.png"}]') IS NOT NULL AS linked \gset
-- gone.png and twin.png serve the same bytes: one stored image
SELECT record_product_image('http://img.t29/gone.png', repeat('cd', 32), 'images/cd/' || repeat('cd', 32) || '.png', 10, 'image/png') IS NOT NULL AS r1 \gset
SELECT record_product_image('http://img.t29/twin.png', repeat('cd', 32), 'images/cd/' || repeat('cd', 32) || '.png', 10, 'image/png') IS NOT NULL AS r2 \gset
SELECT record_product_image('http://img.t29/kept.png', repeat('ef', 32), 'images/ef/' || repeat('ef', 32) || '.png', 10, 'image/png') IS NOT NULL AS r3 \gset

/****************************************************************************/
-- the marks: a URL no product shows is unlinked since then; shown again, it is not

SELECT ok(pg_temp.unlinked_at('http://img.t29/gone.png') IS NULL, 'Should not mark a URL a product shows');
SELECT link_product_images(:payload,
    '[{"id": "a", "image_url": "http://img.t29/kept.png"},
      {"id": "b", "image_url": null},
      {"id": "c", "image_url": "http://img.t29/twin.png"}]') IS NOT NULL AS unlinked \gset
SELECT is(pg_temp.unlinked_at('http://img.t29/gone.png'), taskpool_now(),
    'Should mark a URL unlinked when its last product stops showing it');
SELECT link_product_images(:payload,
    '[{"id": "a", "image_url": "http://img.t29/kept.png"},
      {"id": "b", "image_url": "http://img.t29/gone.png"},
      {"id": "c", "image_url": "http://img.t29/twin.png"}]') IS NOT NULL AS relinked \gset
SELECT ok(pg_temp.unlinked_at('http://img.t29/gone.png') IS NULL, 'Should clear the mark of a URL shown again');
SELECT link_product_images(:payload,
    '[{"id": "a", "image_url": "http://img.t29/kept.png"},
      {"id": "b", "image_url": "http://img.t29/twin.png"},
      {"id": "c", "image_url": "http://img.t29/twin.png"}]') IS NOT NULL AS moved \gset
SELECT is(pg_temp.unlinked_at('http://img.t29/gone.png'), taskpool_now(),
    'Should mark a URL unlinked when its product shows another URL');
SELECT ok(pg_temp.unlinked_at('http://img.t29/twin.png') IS NULL AND pg_temp.unlinked_at('http://img.t29/kept.png') IS NULL,
    'Should leave the URLs still shown unmarked');

/****************************************************************************/
-- pruning: URLs unlinked longer than the keep; an image only when no URL names it

UPDATE retention_policies SET enabled = true WHERE name = 'product_images';
SELECT pg_temp.age_unlinked('http://img.t29/gone.png', '91 days');
SELECT is((SELECT would_prune FROM count_retention() WHERE policy = 'product_images'), 1::bigint,
    'Should count the URL unlinked for longer than 90 days');
SELECT results_eq($$SELECT pruned, finished FROM apply_retention(10) WHERE policy = 'product_images'$$,
    $$VALUES (1::bigint, true)$$, 'Should prune it');
SELECT ok(NOT EXISTS (SELECT FROM product_image_urls WHERE image_url = 'http://img.t29/gone.png'),
    'Should delete the URL');
SELECT ok(EXISTS (SELECT FROM product_images WHERE sha256 = repeat('cd', 32)),
    'Should keep an image another URL still names');
SELECT is_empty($$SELECT FROM payload_file_removals WHERE payload_id IS NULL$$,
    'Should queue no file of an image kept');

-- the product stops showing twin.png too, for longer than the keep
SELECT link_product_images(:payload,
    '[{"id": "a", "image_url": "http://img.t29/kept.png"},
      {"id": "b", "image_url": null},
      {"id": "c", "image_url": null}]') IS NOT NULL AS unlinked_twin \gset
SELECT pg_temp.age_unlinked('http://img.t29/twin.png', '100 days');
SELECT results_eq($$SELECT pruned FROM apply_retention(10) WHERE policy = 'product_images'$$,
    $$VALUES (1::bigint)$$, 'Should prune the last URL of the image');
SELECT ok(NOT EXISTS (SELECT FROM product_images WHERE sha256 = repeat('cd', 32)),
    'Should delete the image no URL names any more');
SELECT results_eq($$SELECT storage_path, payload_id FROM payload_file_removals WHERE payload_id IS NULL$$,
    $$VALUES ('images/cd/' || repeat('cd', 32) || '.png', NULL::bigint)$$,
    'Should queue the image''s file for removal, with no payload');
SELECT ok(EXISTS (SELECT FROM worker_tasks WHERE role = 'payload_file_removal' AND status = 'pending'),
    'Should queue a payload_file_removal task to remove it');
SELECT is(payload_files_to_remove(10), 'images/cd/' || repeat('cd', 32) || '.png',
    'Should hand the image''s file to the removal task');
SELECT ok(EXISTS (SELECT FROM product_images WHERE sha256 = repeat('ef', 32)),
    'Should keep the image of a URL still shown');

-- the same bytes stored again before the file went: the file is that row's again
INSERT INTO product_image_urls (image_url, platform) VALUES ('http://img.t29/again.png', 't29');
SELECT record_product_image('http://img.t29/again.png', repeat('cd', 32), 'images/cd/' || repeat('cd', 32) || '.png', 10, 'image/png') IS NOT NULL AS again \gset
SELECT is_empty($$SELECT payload_files_to_remove(10)$$,
    'Should not hand out the file of an image stored again');

-- a product removed (a store leaving cascades the same way) unlinks its URL
DELETE FROM store_products WHERE dispensary_id = :store AND platform_product_id = 'a';
SELECT is(pg_temp.unlinked_at('http://img.t29/kept.png'), taskpool_now(),
    'Should mark the URL of a removed product unlinked');

/****************************************************************************/
-- resync_plan_entries: the entries of days older than the keep, and a day of margin

UPDATE retention_policies SET enabled = false;
UPDATE retention_policies SET enabled = true WHERE name = 'resync_plan_entries';
INSERT INTO resync_plan_entries (day, dispensary_id, slot, scheduled_for)
SELECT (taskpool_now() - d * interval '1 day')::date, :store, 0, taskpool_now() - d * interval '1 day'
FROM unnest(ARRAY[40, 33, 31, 10, 0]) d;
SELECT is((SELECT would_prune FROM count_retention() WHERE policy = 'resync_plan_entries'), 2::bigint,
    'Should count the entries of days more than 31 days ago');
SELECT results_eq($$SELECT pruned, finished FROM apply_retention(10) WHERE policy = 'resync_plan_entries'$$,
    $$VALUES (2::bigint, true)$$, 'Should prune them');
SELECT results_eq(
    $$SELECT (taskpool_now()::date - day) FROM resync_plan_entries WHERE dispensary_id = $$ || :store || $$ ORDER BY day$$,
    $$VALUES (31), (10), (0)$$,
    'Should keep the entries of the last 31 days');

/****************************************************************************/
-- bad input to the policy: a clear error, nothing changed

SELECT tests.rejects($$SELECT set_retention_policy('product_images', batch_size := 0)$$, '22023',
    'batch_size must be from 1 to 100000, not 0', 'a batch size of 0 for the images policy', '{retention_policies}');

SELECT * FROM finish();
ROLLBACK;
