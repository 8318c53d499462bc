-- product_images: images stored once per content hash and linked to store products.
-- link_product_images (product_refresh, after apply_menu_payload) records the links and queues
-- one image_download per URL not stored yet; record_product_image and
-- record_image_download_failure (the image_download handler) record what a download gave. The
-- handler itself, and a broken image failing its own task only, are
-- crawler/tests/test_crawler_images.py.
BEGIN;
SELECT plan(37);

/****************************************************************************/
-- structure

SELECT has_table('public', 'product_images', 'Should have product_images, one row per content hash');
SELECT has_table('public', 'product_image_urls', 'Should have product_image_urls, each URL''s download');
SELECT has_table('public', 'store_product_images', 'Should have store_product_images, each product''s image URL');
SELECT ok(EXISTS (SELECT FROM task_roles WHERE role = 'image_download' AND NOT requires_store),
    'Should have the role image_download, which needs no store (an image is shared by stores)');
SELECT ok(has_function_privilege('taskpool_worker', 'link_product_images(bigint, jsonb)', 'EXECUTE')
          AND has_function_privilege('taskpool_worker', 'record_product_image(text, text, text, integer, text)', 'EXECUTE')
          AND has_function_privilege('taskpool_worker', 'record_image_download_failure(text, text)', 'EXECUTE'),
    'Should let a crawler worker link, record and fail images');
SELECT ok(NOT has_table_privilege('taskpool_worker', 'product_images', 'SELECT')
          AND NOT has_table_privilege('taskpool_worker', 'store_product_images', 'INSERT'),
    'Should give taskpool_worker no access to the image tables themselves');
SELECT ok(NOT has_function_privilege('public', 'link_product_images(bigint, jsonb)', 'EXECUTE'),
    'Should not let PUBLIC link images');

/****************************************************************************/
-- fixtures: a store on platform t60 with an applied payload of three products

INSERT INTO dispensaries (name, platform) VALUES ('t60 Store', 't60'), ('t60 Other', 't61');
SELECT id AS store FROM dispensaries WHERE name = 't60 Store' \gset
SELECT id AS other FROM dispensaries WHERE name = 't60 Other' \gset
CREATE FUNCTION pg_temp.applied(store_id integer, fetched_at timestamptz, products jsonb)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_id bigint;
BEGIN
    v_id := record_crawl_payload(applied.store_id, applied.fetched_at,
        format('payloads/%s/store_%s_%sZ.json.gz', to_char(applied.fetched_at AT TIME ZONE 'UTC', 'YYYY/MM/DD'),
               applied.store_id, to_char(applied.fetched_at AT TIME ZONE 'UTC', 'YYYYMMDD"T"HH24MISSUS')),
        100, encode(sha256(convert_to(applied.fetched_at::text, 'UTF8')), 'hex'));
    PERFORM apply_menu_payload(v_id, applied.products);
    RETURN v_id;
END;
$$;
SELECT pg_temp.applied(:store, now() - interval '1 hour',
    '[{"id": "a", "name": "A", "price": 1, "stock": 1},
      {"id": "b", "name": "B", "price": 2, "stock": 2},
      {"id": "c", "name": "C", "price": 3, "stock": 3}]') AS payload \gset
SELECT pg_temp.applied(:other, now() - interval '1 hour',
    '[{"id": "x", "name": "X", "price": 1, "stock": 1}]') AS other_payload \gset

/****************************************************************************/
-- behaviour: linking and queueing

SELECT is(link_product_images(:payload,
    '[{"id": "a", "image_url": "http://img.t60/shared.png"},
      {"id": "b", "image_url": "http://img.t60/shared.png"},
      {"id": "c", "image_url": null}]'),
    '{"linked": 2, "unlinked": 0, "queued": 1, "stored": 0, "superseded": 0}'::jsonb,
    'Should link two products to one URL and queue that URL once');
SELECT results_eq(
    $$SELECT platform, payload, dispensary_id, dedupe_key FROM worker_tasks WHERE role = 'image_download'$$,
    $$VALUES ('t60', '{"image_url": "http://img.t60/shared.png"}'::jsonb, NULL::integer,
              _image_download_dedupe_key('http://img.t60/shared.png'))$$,
    'Should queue the download on the store''s platform, with no store, deduplicated by the URL');
SELECT is(link_product_images(:other_payload, '[{"id": "x", "image_url": "http://img.t60/shared.png"}]') ->> 'queued',
    '0', 'Should queue no second download of a URL whose download is active (another store linking it)');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 'image_download'), 1::bigint,
    'Should have one image_download task for the URL');
SELECT is((SELECT platform FROM product_image_urls WHERE image_url = 'http://img.t60/shared.png'), 't60',
    'Should keep the platform of the store that named the URL first');
SELECT is(link_product_images(:payload,
    '[{"id": "a", "image_url": "http://img.t60/shared.png"},
      {"id": "b", "image_url": "http://img.t60/shared.png"},
      {"id": "c", "image_url": null}]'),
    '{"linked": 0, "unlinked": 0, "queued": 0, "stored": 0, "superseded": 0}'::jsonb,
    'Should change nothing when the same links come again');

/****************************************************************************/
-- behaviour: recording a download, idempotent per hash

SELECT is(record_product_image('http://img.t60/shared.png', repeat('ab', 32), 'images/ab/' || repeat('ab', 32) || '.png',
                               120, 'image/png'),
    jsonb_build_object('sha256', repeat('ab', 32), 'storage_key', 'images/ab/' || repeat('ab', 32) || '.png', 'new', true),
    'Should record a new image and say so');
SELECT is(record_product_image('http://img.t60/shared.png', upper(repeat('ab', 32)), 'images/ab/' || repeat('ab', 32) || '.png',
                               120, 'image/png') ->> 'new',
    'false', 'Should record the same content again as not new (a retried attempt)');
SELECT is((SELECT count(*) FROM product_images), 1::bigint, 'Should store the content once');
SELECT ok((SELECT image_sha256 = repeat('ab', 32) AND last_downloaded_at IS NOT NULL
           FROM product_image_urls WHERE image_url = 'http://img.t60/shared.png'),
    'Should link the URL to its content, with when it was downloaded');
SELECT results_eq(
    $$SELECT spi.platform_product_id, i.storage_key FROM store_product_images spi
      JOIN product_image_urls u USING (image_url) JOIN product_images i ON i.sha256 = u.image_sha256
      WHERE spi.dispensary_id = $$ || :store || $$ ORDER BY 1$$,
    $$VALUES ('a', 'images/ab/' || repeat('ab', 32) || '.png'), ('b', 'images/ab/' || repeat('ab', 32) || '.png')$$,
    'Should reach each product''s stored image: product -> URL -> hash -> storage key');

-- Another URL with the same bytes: a download, then the same row.
SELECT is(link_product_images(:payload,
    '[{"id": "a", "image_url": "http://img.t60/shared.png"},
      {"id": "b", "image_url": "https://cdn.t60/copy.png"},
      {"id": "c", "image_url": "http://img.t60/shared.png"}]'),
    '{"linked": 2, "unlinked": 0, "queued": 1, "stored": 1, "superseded": 0}'::jsonb,
    'Should link a stored URL without a download, and queue the new one');
SELECT is(record_product_image('https://cdn.t60/copy.png', repeat('ab', 32), 'images/ab/' || repeat('ab', 32) || '.png',
                               120, 'image/png') ->> 'new',
    'false', 'Should find another URL''s identical bytes stored already');
SELECT is((SELECT count(*) FROM product_images), 1::bigint, 'Should still store the content once');
SELECT is(link_product_images(:payload,
    '[{"id": "a", "image_url": null}, {"id": "b", "image_url": "https://cdn.t60/copy.png"},
      {"id": "c", "image_url": "http://img.t60/shared.png"}]') ->> 'unlinked',
    '1', 'Should unlink a product whose menu gives no image any more');

/****************************************************************************/
-- behaviour: an older payload moves no link; a failure holds downloads back a day

SELECT pg_temp.applied(:store, now() - interval '5 hours',
    '[{"id": "a", "name": "A", "price": 1, "stock": 1}]') AS old_payload \gset
SELECT is(link_product_images(:old_payload, '[{"id": "a", "image_url": "http://img.t60/old.png"}]'),
    '{"linked": 0, "unlinked": 0, "queued": 0, "stored": 0, "superseded": 1}'::jsonb,
    'Should link nothing from a payload older than the products'' newest');

SELECT link_product_images(:payload, '[{"id": "a", "image_url": "http://img.t60/broken.png"}]');
SELECT lives_ok($$SELECT record_image_download_failure('http://img.t60/broken.png', 'GET http://img.t60/broken.png: HTTP 404')$$,
    'Should record a failed download');
SELECT ok((SELECT last_failed_at IS NOT NULL AND last_error LIKE '%HTTP 404' AND image_sha256 IS NULL
           FROM product_image_urls WHERE image_url = 'http://img.t60/broken.png'),
    'Should keep when and why it failed');
UPDATE worker_tasks SET status = 'cancelled', completed_at = now()
WHERE role = 'image_download' AND payload ->> 'image_url' = 'http://img.t60/broken.png';
SELECT is(link_product_images(:payload, '[{"id": "a", "image_url": "http://img.t60/broken.png"}]') ->> 'queued',
    '0', 'Should queue no download of a URL that failed less than a day ago');
UPDATE product_image_urls SET last_failed_at = now() - interval '25 hours' WHERE image_url = 'http://img.t60/broken.png';
SELECT is(link_product_images(:payload, '[{"id": "a", "image_url": "http://img.t60/broken.png"}]') ->> 'queued',
    '1', 'Should try a failed URL again after a day');

/****************************************************************************/
-- bad input: 22023 naming what was wrong, nothing written

SELECT throws_ok($$SELECT link_product_images(NULL, '[]')$$, '22023', NULL, 'Should refuse a NULL payload id');
SELECT throws_ok($$SELECT link_product_images(1, '{}')$$, '22023', NULL, 'Should refuse images that are not an array');
SELECT throws_ok($$SELECT link_product_images(-1, '[]')$$, 'P0002', 'payload -1 does not exist',
    'Should refuse an unknown payload');
SELECT throws_ok(format($$SELECT link_product_images(%s, '[{"id": "a", "image_url": "file:///etc/passwd"}]')$$, :payload),
    '22023', 'images[0]: image_url file:///etc/passwd is not an http(s) URL of at most 2048 characters',
    'Should refuse an image URL that is not http(s)');
SELECT throws_ok(format($$SELECT link_product_images(%s, '[{"id": "a", "image_url": null}, {"id": "b"}]')$$, :payload),
    '22023', 'images[1]: image_url is missing (null for no image)', 'Should name an element without image_url');
SELECT throws_ok(format($$SELECT link_product_images(%s, '[{"id": "a", "image_url": null}, {"id": "a", "image_url": null}]')$$, :payload),
    '22023', 'images: id a appears twice', 'Should refuse a product given twice');
SELECT throws_ok($$SELECT record_product_image('http://img.t60/shared.png', 'abc', 'images/ab/abc.png', 1, 'image/png')$$,
    '22023', 'sha256 must be 64 hex digits, not ''abc''', 'Should refuse a hash that is not one');
SELECT throws_ok(format($$SELECT record_product_image('http://img.t60/shared.png', %L, '../../etc/x.png', 1, 'image/png')$$, repeat('cd', 32)),
    '22023', NULL, 'Should refuse a storage key outside the content-addressed layout');
SELECT throws_ok(format($$SELECT record_product_image('http://img.t60/shared.png', %L, %L, 1, 'text/html')$$,
                        repeat('cd', 32), 'images/cd/' || repeat('cd', 32) || '.png'),
    '22023', NULL, 'Should refuse a content type that is not an image''s');
SELECT throws_ok(format($$SELECT record_product_image('http://never.linked/x.png', %L, %L, 1, 'image/png')$$,
                        repeat('cd', 32), 'images/cd/' || repeat('cd', 32) || '.png'),
    '22023', 'image URL ''http://never.linked/x.png'' was never linked to a product (link_product_images records it)',
    'Should refuse a URL no product links');

SELECT * FROM finish();
ROLLBACK;
