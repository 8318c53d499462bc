-- crawl: the crawler's database half at work. Store discovery upserts stores; a
-- crawl records its payload (or marks it corrupt); applying payloads keeps store_products and the
-- snapshots (added, updated, missing, back again; applied twice; an older payload applied late);
-- diffs between payloads; the analytics views after refresh_analytics(); bad input that changes
-- nothing; and all of it as taskpool_worker where the handlers call it.
BEGIN;
SELECT plan(112);

-- The payload times: t0 < t1 < t2 on one UTC day, t3 the next day, t4 the day after.
\set t0 '''2026-02-28 08:00:00+00'''
\set t1 '''2026-03-01 08:00:00+00'''
\set t2 '''2026-03-01 12:00:00+00'''
\set t3 '''2026-03-02 08:00:00+00'''
\set t4 '''2026-03-03 08:00:00+00'''

-- pg_temp.path: the storage path of the store's payload fetched at the time, in the documented
-- layout; the tag picks its microseconds, so that tags of one store and time differ.
CREATE FUNCTION pg_temp.path(store_id integer, fetched_at timestamptz, tag text)
RETURNS text
LANGUAGE sql
AS $$
    SELECT format('payloads/%s/store_%s_%s%sZ.json.gz',
                  to_char(path.fetched_at AT TIME ZONE 'UTC', 'YYYY/MM/DD'), path.store_id,
                  to_char(path.fetched_at AT TIME ZONE 'UTC', 'YYYYMMDD"T"HH24MISS'),
                  lpad(((('x' || left(md5(path.tag), 5))::bit(20)::integer) % 1000000)::text, 6, '0'));
$$;

-- pg_temp.payload: records a payload of the store, fetched at the time, under a path named by tag.
CREATE FUNCTION pg_temp.payload(store_id integer, fetched_at timestamptz, tag text)
RETURNS bigint
LANGUAGE sql
AS $$
    SELECT record_crawl_payload(payload.store_id, payload.fetched_at,
                                pg_temp.path(payload.store_id, payload.fetched_at, payload.tag),
                                1000, encode(sha256(convert_to(payload.tag, 'UTF8')), 'hex'));
$$;

-- What a rejected call must leave as it was (tests.rejects' tables): every table the crawler
-- functions write.
\set written_tables '''{dispensaries, raw_crawl_payloads, crawl_payload_products, store_products, store_product_snapshots}'''

/****************************************************************************/
-- upsert_discovered_stores

SELECT upsert_discovered_stores('t15-platform', $$[
    {"platform_store_id": "s-1", "name": "Green Leaf", "state": "CA", "city": "Oakland",
     "menu_url": "http://127.0.0.1:1/t15/s-1"},
    {"platform_store_id": 17, "name": "O'Reilly \"Buds\"; DROP TABLE dispensaries; --"}
]$$) AS first_ids \gset

SELECT is(cardinality(:'first_ids'::integer[]), 2, 'Should return the ids of the two new stores');
SELECT results_eq(
    format($$SELECT name, platform, platform_dispensary_id, state_code, city, menu_url, active, first_seen_at
             FROM dispensaries WHERE id = ANY (%L::integer[]) ORDER BY id$$, :'first_ids'),
    $$VALUES ('Green Leaf'::text, 't15-platform'::text, 's-1'::text, 'CA'::text, 'Oakland'::text,
              'http://127.0.0.1:1/t15/s-1'::text, true, now()),
             ('O''Reilly "Buds"; DROP TABLE dispensaries; --', 't15-platform', '17', NULL, NULL, NULL, true, now())$$,
    'Should add new stores active, first seen now, with what the platform said (hostile names kept as text)');

SELECT id AS green_id FROM dispensaries WHERE platform = 't15-platform' AND platform_dispensary_id = 's-1' \gset
SELECT id AS buds_id FROM dispensaries WHERE platform = 't15-platform' AND platform_dispensary_id = '17' \gset
UPDATE dispensaries SET first_seen_at = now() - interval '3 days', active = false WHERE id = :buds_id;
-- Green Leaf had its first crawl: a known store that did not is returned again (27_crawler_hostile).
UPDATE dispensaries SET first_seen_at = now() - interval '3 days', last_crawled_at = now() - interval '2 days'
WHERE id = :green_id;

SELECT upsert_discovered_stores('t15-platform', $$[
    {"platform_store_id": "s-1", "name": "Green Leaf Oakland", "city": null},
    {"platform_store_id": "s-3", "name": "Third Store", "state": "NV"},
    {"platform_store_id": "17", "name": "Buds"}
]$$) AS second_ids \gset

SELECT is(:'second_ids'::integer[],
          (SELECT array_agg(id) FROM dispensaries WHERE platform = 't15-platform' AND platform_dispensary_id = 's-3'),
          'Should return only the new store''s id when known stores (crawled, or inactive) come again');
SELECT results_eq(
    format($$SELECT name, state_code, city, menu_url, active, first_seen_at, updated_at
             FROM dispensaries WHERE id IN (%s, %s) ORDER BY id$$, :green_id, :buds_id),
    $$VALUES ('Green Leaf Oakland'::text, 'CA'::text, NULL::text, 'http://127.0.0.1:1/t15/s-1'::text, true,
              now() - interval '3 days', now()),
             ('Buds', NULL, NULL, NULL, false, now() - interval '3 days', now())$$,
    'Should update known stores (a field left out kept, a null cleared), matching a number id to its text, '
    'and leave first_seen_at and active alone');
SELECT is(upsert_discovered_stores('t15-platform', '[]'), '{}'::integer[],
          'Should return an empty array for an empty list');
SELECT is(upsert_discovered_stores('t15-other-platform', '[{"platform_store_id": "s-1", "name": "Namesake"}]')
          = '{}'::integer[], false, 'Should key stores by platform too: the same id on another platform is new');

SELECT * FROM tests.rejects(
    $$SELECT upsert_discovered_stores('t15-platform', '{"platform_store_id": "s-9", "name": "N"}')$$,
    '22023', 'stores must be a JSON array of store objects, not object', 'stores that are not an array',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    $$SELECT upsert_discovered_stores('t15-platform',
          '[{"platform_store_id": "s-9", "name": "Good"}, {"name": "No Id"}]')$$,
    '22023', 'stores[1]: platform_store_id is required', 'a store without platform_store_id, after a good one',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    $$SELECT upsert_discovered_stores('t15-platform', '[{"platform_store_id": "s-9", "name": "  "}]')$$,
    '22023', 'stores[0]: name must be a non-empty string, not "  "', 'a blank store name',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    $$SELECT upsert_discovered_stores('t15-platform', '[{"platform_store_id": "s-9"}]')$$,
    '22023', 'stores[0]: name is required', 'a store without a name',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    $$SELECT upsert_discovered_stores('t15-platform',
          '[{"platform_store_id": "s-9", "name": "A"}, {"platform_store_id": "s-10", "name": "B"},
            {"platform_store_id": "s-11", "name": "C", "state": "ca"}]')$$,
    '22023', 'stores[2]: state must be a two-letter upper-case code, not "ca"', 'a bad state code',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    $$SELECT upsert_discovered_stores('t15-platform', '[{"platform_store_id": "s-9", "name": "A", "zip": "94612"}]')$$,
    '22023', 'stores[0]: unknown field ''zip''', 'an unknown store field',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    $$SELECT upsert_discovered_stores('t15-platform',
          '[{"platform_store_id": "s-9", "name": "A"}, {"platform_store_id": "s-9", "name": "B"}]')$$,
    '22023', 'stores[1]: platform_store_id "s-9" appears twice (also stores[0])', 'a store listed twice',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    $$SELECT upsert_discovered_stores('t15-platform',
          '[{"platform_store_id": "s-9", "name": "A", "menu_url": "http://127.0.0.1:1/t15/s-1"}]')$$,
    '23505', format('stores[0]: menu_url "http://127.0.0.1:1/t15/s-1" belongs to dispensary %s already', :green_id),
    'a menu URL another store has',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    $$SELECT upsert_discovered_stores('  ', '[]')$$,
    '22023', 'platform must be a name of 1 to 100 characters, not ''  ''', 'a blank platform',
    tables := :written_tables);

/****************************************************************************/
-- record_crawl_payload, get_crawl_payload, get_dispensary

SELECT tests.make_store(name := 'T15 Menu Store') AS store_id \gset
SELECT tests.make_store(name := 'T15 Other Store') AS other_id \gset
SELECT coalesce(max(id), 0) + 1000 AS missing_store_id FROM dispensaries \gset
SELECT coalesce(max(id), 0) + 1000 AS missing_payload_id FROM raw_crawl_payloads \gset

SELECT pg_temp.path(:store_id, :t1, 'p1') AS p1_path \gset
SELECT record_crawl_payload(:store_id, :t1, :'p1_path', 1000, upper(repeat('ab', 32))) AS p1 \gset
SELECT results_eq(
    format($$SELECT dispensary_id, fetched_at, storage_path, size_bytes, sha256, product_count, status, error_message,
                    applied_at, apply_result
             FROM raw_crawl_payloads WHERE id = %s$$, :p1),
    format($$VALUES (%s, %L::timestamptz, %L::text, 1000, repeat('ab', 32), NULL::integer,
                     'saved'::text, NULL::text, NULL::timestamptz, NULL::jsonb)$$, :store_id, :t1, :'p1_path'),
    'Should record a saved payload, its checksum in lower case');
SELECT is((SELECT last_crawled_at FROM dispensaries WHERE id = :store_id), :t1::timestamptz,
          'Should move the store''s last_crawled_at to the payload''s fetched_at');
SELECT is(record_crawl_payload(:store_id, :t1, :'p1_path', 1000, repeat('ab', 32)), :p1::bigint,
          'Should answer a repeated recording of the same file with its first id');
SELECT pg_temp.payload(:store_id, :t2, 'p2') AS p2 \gset
SELECT pg_temp.payload(:store_id, :t3, 'p3') AS p3 \gset
SELECT pg_temp.payload(:store_id, :t0, 'p0') AS p0 \gset
SELECT is((SELECT last_crawled_at FROM dispensaries WHERE id = :store_id), :t3::timestamptz,
          'Should not move last_crawled_at back for a payload recorded late');
SELECT is((get_crawl_payload(:p2)).storage_path, pg_temp.path(:store_id, :t2, 'p2'), 'Should look a payload up by id');
SELECT is((get_dispensary(:green_id)).menu_url, 'http://127.0.0.1:1/t15/s-1', 'Should look a store up by id');
SELECT throws_ok(format('SELECT get_crawl_payload(%s)', :missing_payload_id),
    'P0002', format('payload %s does not exist', :missing_payload_id), 'Should say so when a payload is unknown');
SELECT throws_ok(format('SELECT get_dispensary(%s)', :missing_store_id),
    'P0002', format('dispensary %s does not exist', :missing_store_id), 'Should say so when a store is unknown');

SELECT * FROM tests.rejects(
    format($$SELECT record_crawl_payload(%s, %L, %L, 1000, repeat('cd', 32))$$, :store_id, :t1, :'p1_path'),
    '23505', format('storage_path %L is recorded already, as payload %s of dispensary %s',
                    :'p1_path', :p1, :store_id),
    'another file at a recorded path',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT record_crawl_payload(%s, %L, pg_temp.path(%s, %L, 'x'), 1000, repeat('ab', 32))$$,
           :missing_store_id, :t1, :missing_store_id, :t1),
    'P0002', format('dispensary %s does not exist', :missing_store_id), 'a payload of an unknown store',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT record_crawl_payload(%s, %L, pg_temp.path(%s, %L, 'x'), 1000, 'xyz')$$, :store_id, :t1, :store_id, :t1),
    '22023', 'sha256 must be 64 hex digits, not ''xyz''', 'a checksum that is not sha256 hex',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT record_crawl_payload(%s, %L, pg_temp.path(%s, %L, 'x'), 0, repeat('ab', 32))$$, :store_id, :t1, :store_id, :t1),
    '22023', 'size_bytes must be positive, not 0', 'an empty file',
    tables := :written_tables);

/****************************************************************************/
-- mark_payload_corrupt

SELECT pg_temp.payload(:store_id, :t1, 'corrupt') AS corrupt_id \gset
SELECT lives_ok(format($$SELECT mark_payload_corrupt(%s, 'gzip: unexpected end of file')$$, :corrupt_id),
                'Should mark a saved payload corrupt');
SELECT results_eq(
    format('SELECT status, error_message, applied_at FROM raw_crawl_payloads WHERE id = %s', :corrupt_id),
    $$VALUES ('corrupt'::text, 'gzip: unexpected end of file'::text, NULL::timestamptz)$$,
    'Should keep the corrupt payload with its error');
SELECT * FROM tests.rejects(
    format($$SELECT apply_menu_payload(%s, '[]')$$, :corrupt_id),
    '55000', format('payload %s is corrupt: gzip: unexpected end of file', :corrupt_id), 'applying a corrupt payload',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT mark_payload_corrupt(%s, 'x')$$, :missing_payload_id),
    'P0002', format('payload %s does not exist', :missing_payload_id), 'marking an unknown payload',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT mark_payload_corrupt(%s, '  ')$$, :p2),
    '22023', 'error_message must say what is wrong with the payload, not be empty', 'marking without an error',
    tables := :written_tables);

/****************************************************************************/
-- apply_menu_payload: bad input first, on p1 (saved), then the payloads in order

SELECT * FROM tests.rejects(
    format($$SELECT apply_menu_payload(%s, '{"id": "a"}')$$, :p1),
    '22023', 'products must be a JSON array of product objects, not object', 'products that are not an array',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT apply_menu_payload(%s, '[{"id": "a", "name": "A"}, {"id": ["a"], "name": "Listed Id"}]')$$, :p1),
    '22023', 'products[1]: id must be a string (at most 255 characters), a whole number, or absent, null or blank, not ["a"]',
    'a product whose id is a list',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT apply_menu_payload(%s, '[{"id": "a", "name": "A", "price": -1}]')$$, :p1),
    '22023', 'products[0]: price must be a number from 0 to 99999999.99 or null, not -1', 'a negative price',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT apply_menu_payload(%s, '[{"id": "a", "name": "A"}, {"id": "b", "name": "B"},
                                             {"id": "c", "name": "C", "stock": 1.5}]')$$, :p1),
    '22023', 'products[2]: stock must be a whole number from 0 up or null, not 1.5', 'a fractional stock',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT apply_menu_payload(%s, '[{"id": "a", "name": "A"}, {"id": "a", "name": "A again"}]')$$, :p1),
    '22023', 'products[1]: id "a" appears twice (also products[0])', 'a product listed twice',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT apply_menu_payload(%s, '[{"id": "a", "name": "A", "thc": 21.5}]')$$, :p1),
    '22023', 'products[0]: unknown field ''thc''', 'an unknown product field',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT apply_menu_payload(%s, '[{"id": "a", "name": "A", "price": "12.50"}]')$$, :p1),
    '22023', 'products[0]: price must be a number from 0 to 99999999.99 or null, not "12.50"', 'a price as a string',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT apply_menu_payload(%s, '[]')$$, :missing_payload_id),
    'P0002', format('payload %s does not exist', :missing_payload_id), 'applying an unknown payload',
    tables := :written_tables);

-- p1 (t1): a, b, c, d on the menu
SELECT is(apply_menu_payload(:p1, $$[
    {"id": "a", "name": "Alpha 3.5g", "brand": "Acme", "category": "flower", "price": 10, "stock": 5},
    {"id": "b", "name": "Beta 1g", "brand": "Acme", "category": "flower", "price": 20, "stock": 0},
    {"id": "c", "name": "Choco Bar", "brand": null, "category": "edible", "price": 30.5, "stock": 3},
    {"id": "d", "name": "Dab Tool"}
]$$), '{"products": 4, "added": 4, "updated": 0, "missing": 0, "snapshots": 4, "superseded_by": null, "hashed": 0, "duplicates": []}'::jsonb,
    'Should add every product of a store''s first payload, with a snapshot each');
SELECT results_eq(
    format($$SELECT platform_product_id, name, brand, category, price, stock, in_stock, first_seen_at, last_seen_at,
                    missing_since, last_payload_id
             FROM store_products WHERE dispensary_id = %s ORDER BY platform_product_id$$, :store_id),
    format($$VALUES ('a'::text, 'Alpha 3.5g'::text, 'Acme'::text, 'flower'::text, 10.00::numeric, 5, true,
                     %1$L::timestamptz, %1$L::timestamptz, NULL::timestamptz, %2$s::bigint),
                    ('b', 'Beta 1g', 'Acme', 'flower', 20.00, 0, false, %1$L, %1$L, NULL, %2$s),
                    ('c', 'Choco Bar', NULL, 'edible', 30.50, 3, true, %1$L, %1$L, NULL, %2$s),
                    ('d', 'Dab Tool', NULL, NULL, NULL, NULL, NULL, %1$L, %1$L, NULL, %2$s)$$, :t1, :p1),
    'Should hold the store''s products as the payload shows them, in_stock from the stock');
SELECT results_eq(
    format($$SELECT status, product_count, applied_at, apply_result ->> 'added'
             FROM raw_crawl_payloads WHERE id = %s$$, :p1),
    $$VALUES ('applied'::text, 4, now(), '4'::text)$$,
    'Should mark the payload applied, with its product count and result');
SELECT is((SELECT count(*) FROM crawl_payload_products WHERE payload_id = :p1), 4::bigint,
          'Should record the payload''s products');

-- p1 again: a retried product_refresh
SELECT is(apply_menu_payload(:p1, $$[
    {"id": "d", "name": "Dab Tool"},
    {"id": "a", "name": "Alpha 3.5g", "brand": "Acme", "category": "flower", "price": 10.00, "stock": 5},
    {"id": "b", "name": "Beta 1g", "brand": "Acme", "category": "flower", "price": 20, "stock": 0},
    {"id": "c", "name": "Choco Bar", "category": "edible", "price": 30.50, "stock": 3}
]$$), '{"products": 4, "added": 4, "updated": 0, "missing": 0, "snapshots": 4, "superseded_by": null, "hashed": 0, "duplicates": []}'::jsonb,
    'Should answer a payload applied twice with the first result');
SELECT is((SELECT count(*) FROM store_product_snapshots WHERE dispensary_id = :store_id), 4::bigint,
          'Should add no snapshot when a payload is applied twice');
SELECT * FROM tests.rejects(
    format($$SELECT apply_menu_payload(%s, '[{"id": "a", "name": "Alpha 3.5g", "price": 11}]')$$, :p1),
    '55000', format('payload %s was applied already, with other products', :p1),
    'applying an applied payload with other products',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT mark_payload_corrupt(%s, 'too late')$$, :p1),
    '55000', format('payload %s is applied; it cannot be marked corrupt', :p1), 'marking an applied payload corrupt',
    tables := :written_tables);

-- p2 (t2, same day): a's stock and b's price change, c is gone, d stays, e is new
SELECT is(apply_menu_payload(:p2, $$[
    {"id": "a", "name": "Alpha 3.5g", "brand": "Acme", "category": "flower", "price": 10, "stock": 4},
    {"id": "b", "name": "Beta 1g", "brand": "Acme", "category": "flower", "price": 22, "stock": 0},
    {"id": "d", "name": "Dab Tool"},
    {"id": "e", "name": "Easy Preroll", "brand": "Zed", "category": "preroll", "price": 5, "stock": 1}
]$$), '{"products": 4, "added": 1, "updated": 2, "missing": 1, "snapshots": 3, "superseded_by": null, "hashed": 0, "duplicates": []}'::jsonb,
    'Should count one added, two updated, one gone missing, and snapshot only what changed that day');
SELECT results_eq(
    format($$SELECT platform_product_id, price, stock, first_seen_at, last_seen_at, missing_since, last_payload_id
             FROM store_products WHERE dispensary_id = %s ORDER BY platform_product_id$$, :store_id),
    format($$VALUES ('a'::text, 10.00::numeric, 4, %1$L::timestamptz, %2$L::timestamptz, NULL::timestamptz, %4$s::bigint),
                    ('b', 22.00, 0, %1$L, %2$L, NULL, %4$s),
                    ('c', 30.50, 3, %1$L, %1$L, %2$L, %3$s),
                    ('d', NULL, NULL, %1$L, %2$L, NULL, %4$s),
                    ('e', 5.00, 1, %2$L, %2$L, NULL, %4$s)$$, :t1, :t2, :p1, :p2),
    'Should update the products, and mark c missing since the payload that lacked it');

-- p3 (t3, next day): c is back, e sold out
SELECT is(apply_menu_payload(:p3, $$[
    {"id": "e", "name": "Easy Preroll", "brand": "Zed", "category": "preroll", "price": 5, "stock": 0},
    {"id": "c", "name": "Choco Bar", "category": "edible", "price": 30.5, "stock": 3},
    {"id": "a", "name": "Alpha 3.5g", "brand": "Acme", "category": "flower", "price": 10, "stock": 4},
    {"id": "b", "name": "Beta 1g", "brand": "Acme", "category": "flower", "price": 22, "stock": 0},
    {"id": "d", "name": "Dab Tool"}
]$$), '{"products": 5, "added": 0, "updated": 2, "missing": 0, "snapshots": 5, "superseded_by": null, "hashed": 0, "duplicates": []}'::jsonb,
    'Should count a product back from missing as updated, and snapshot every product on a new day');
SELECT results_eq(
    format($$SELECT first_seen_at, last_seen_at, missing_since, in_stock FROM store_products
             WHERE dispensary_id = %s AND platform_product_id IN ('c', 'e') ORDER BY platform_product_id$$, :store_id),
    format($$VALUES (%1$L::timestamptz, %3$L::timestamptz, NULL::timestamptz, true),
                    (%2$L, %3$L, NULL, false)$$, :t1, :t2, :t3),
    'Should clear missing_since of a product seen again, keeping when it was first seen');

-- p0 (t0, before p1) applied last: it must not roll the products back
SELECT is(apply_menu_payload(:p0, $$[
    {"id": "a", "name": "Alpha 3.5g (old)", "brand": "Acme", "category": "flower", "price": 9, "stock": 9},
    {"id": "f", "name": "Forgotten"}
]$$), format('{"products": 2, "added": 0, "updated": 0, "missing": 0, "snapshots": 0, "superseded_by": %s, "hashed": 0, "duplicates": []}', :p3)::jsonb,
    'Should only record the products of a payload older than the newest applied one, and name that one');
SELECT results_eq(
    format($$SELECT platform_product_id, name, price, stock, last_seen_at, missing_since, last_payload_id
             FROM store_products WHERE dispensary_id = %s ORDER BY platform_product_id$$, :store_id),
    format($$VALUES ('a'::text, 'Alpha 3.5g'::text, 10.00::numeric, 4, %1$L::timestamptz, NULL::timestamptz, %2$s::bigint),
                    ('b', 'Beta 1g', 22.00, 0, %1$L, NULL, %2$s),
                    ('c', 'Choco Bar', 30.50, 3, %1$L, NULL, %2$s),
                    ('d', 'Dab Tool', NULL, NULL, %1$L, NULL, %2$s),
                    ('e', 'Easy Preroll', 5.00, 0, %1$L, NULL, %2$s)$$, :t3, :p3),
    'Should leave store_products as the newest payload left them');
SELECT results_eq(
    format($$SELECT status, product_count, (SELECT count(*) FROM crawl_payload_products c WHERE c.payload_id = p.id)
             FROM raw_crawl_payloads p WHERE id = %s$$, :p0),
    $$VALUES ('applied'::text, 2, 2::bigint)$$,
    'Should still record the older payload''s products and mark it applied');

SELECT results_eq(
    format($$SELECT platform_product_id, price, stock, captured_at, payload_id
             FROM store_product_snapshots WHERE dispensary_id = %s
             ORDER BY platform_product_id, captured_at$$, :store_id),
    format($$VALUES ('a'::text, 10.00::numeric, 5, %1$L::timestamptz, %4$s::bigint),
                    ('a', 10.00, 4, %2$L, %5$s),
                    ('a', 10.00, 4, %3$L, %6$s),
                    ('b', 20.00, 0, %1$L, %4$s),
                    ('b', 22.00, 0, %2$L, %5$s),
                    ('b', 22.00, 0, %3$L, %6$s),
                    ('c', 30.50, 3, %1$L, %4$s),
                    ('c', 30.50, 3, %3$L, %6$s),
                    ('d', NULL, NULL, %1$L, %4$s),
                    ('d', NULL, NULL, %3$L, %6$s),
                    ('e', 5.00, 1, %2$L, %5$s),
                    ('e', 5.00, 0, %3$L, %6$s)$$, :t1, :t2, :t3, :p1, :p2, :p3),
    'Should keep one snapshot per product, price, stock and day');
SELECT is((SELECT dedupe_key FROM store_product_snapshots
           WHERE dispensary_id = :store_id AND platform_product_id = 'a' AND captured_at = :t1),
          encode(sha256(convert_to(format('%s|a|10.00|5|2026-03-01', :store_id), 'UTF8')), 'hex'),
          'Should key a snapshot by sha256 of store|product|price|stock|UTC day');

/****************************************************************************/
-- diff_payloads and diff_latest_payloads

SELECT diff_payloads(:p1, :p2) AS diff12 \gset
SELECT is(:'diff12'::jsonb -> 'from',
          jsonb_build_object('id', :p1, 'fetchedAt', :t1::timestamptz, 'productCount', 4),
          'Should describe the from payload');
SELECT is(:'diff12'::jsonb -> 'to',
          jsonb_build_object('id', :p2, 'fetchedAt', :t2::timestamptz, 'productCount', 4),
          'Should describe the to payload');
SELECT is(:'diff12'::jsonb -> 'diff',
          '{"added": 1, "removed": 1, "priceChanges": 1, "stockChanges": 1}'::jsonb,
          'Should count products added, removed, and price and stock changes');
SELECT is(:'diff12'::jsonb -> 'details', $${
    "added": [{"id": "e", "name": "Easy Preroll", "brand": "Zed", "category": "preroll", "price": 5.00, "stock": 1}],
    "removed": [{"id": "c", "name": "Choco Bar", "brand": null, "category": "edible", "price": 30.50, "stock": 3}],
    "priceChanges": [{"id": "b", "name": "Beta 1g", "from": 20.00, "to": 22.00}],
    "stockChanges": [{"id": "a", "name": "Alpha 3.5g", "from": 5, "to": 4}]
}$$::jsonb, 'Should list the products added and removed, and each price and stock change');
SELECT is(diff_payloads(:p2, :p2) -> 'diff', '{"added": 0, "removed": 0, "priceChanges": 0, "stockChanges": 0}'::jsonb,
          'Should find nothing between a payload and itself');
SELECT is(diff_latest_payloads(:store_id), diff_payloads(:p2, :p3),
          'Should diff the store''s two newest applied payloads by fetched_at (not the one applied last)');
SELECT is(diff_latest_payloads(:store_id) -> 'diff', '{"added": 1, "removed": 0, "priceChanges": 0, "stockChanges": 1}'::jsonb,
          'Should count c back and e sold out between the two newest payloads');

SELECT pg_temp.payload(:other_id, :t1, 'other-1') AS other_p1 \gset
SELECT apply_menu_payload(:other_p1, '[{"id": "x", "name": "Xylo", "category": "flower", "price": 8, "stock": 2},
                                      {"id": "y", "name": "Yarrow", "category": "flower", "price": 12, "stock": 1}]') IS NOT NULL
    AS applied \gset
SELECT throws_ok(format('SELECT diff_payloads(%s, %s)', :p1, :other_p1),
    '22023', format('payloads %s and %s are of different stores (dispensaries %s and %s)', :p1, :other_p1,
                    :store_id, :other_id),
    'Should refuse to diff payloads of two stores');
SELECT throws_ok(format('SELECT diff_payloads(%s, %s)', :p1, :corrupt_id),
    '55000', format('payload %s is corrupt, not applied', :corrupt_id), 'Should refuse to diff a corrupt payload');
SELECT pg_temp.payload(:other_id, :t2, 'other-2') AS other_p2 \gset
SELECT throws_ok(format('SELECT diff_payloads(%s, %s)', :other_p2, :other_p1),
    '55000', format('payload %s is saved, not applied', :other_p2), 'Should refuse to diff a payload not applied yet');
SELECT throws_ok(format('SELECT diff_payloads(%s, %s)', :p1, :missing_payload_id),
    'P0002', format('payload %s does not exist', :missing_payload_id), 'Should say so when a diffed payload is unknown');
SELECT throws_ok(format('SELECT diff_latest_payloads(%s)', :other_id),
    '55000', format('dispensary %s has 1 applied payload; a diff needs two', :other_id),
    'Should refuse the latest diff of a store with one applied payload');
SELECT throws_ok(format('SELECT diff_latest_payloads(%s)', :missing_store_id),
    'P0002', format('dispensary %s does not exist', :missing_store_id), 'Should say so when the store is unknown');

-- The other store's second payload drops y: a missing product for the analytics below.
SELECT is(apply_menu_payload(:other_p2, '[{"id": "x", "name": "Xylo", "category": "flower", "price": 8, "stock": 0}]')
          ->> 'missing', '1', 'Should mark y missing in the other store');

/****************************************************************************/
-- analytics

SELECT is_empty(format('SELECT 1 FROM mv_store_freshness WHERE dispensary_id = %s', :store_id),
                'Should not show the store in mv_store_freshness before a refresh');
SELECT refresh_analytics() AS report \gset
SELECT is(:'report'::jsonb,
          jsonb_build_object('mv_store_category_prices', (SELECT count(*) FROM mv_store_category_prices),
                             'mv_store_freshness', (SELECT count(*) FROM mv_store_freshness)),
          'Should report the rows of each view after refreshing');
SELECT results_eq(
    format($$SELECT dispensary_id, category, products, in_stock, min_price, avg_price, max_price
             FROM mv_store_category_prices WHERE dispensary_id IN (%s, %s)
             ORDER BY dispensary_id, category NULLS LAST$$, :store_id, :other_id),
    format($$VALUES (%1$s, 'edible'::text, 1::bigint, 1::bigint, 30.50::numeric, 30.50::numeric, 30.50::numeric),
                    (%1$s, 'flower', 2, 1, 10.00, 16.00, 22.00),
                    (%1$s, 'preroll', 1, 0, 5.00, 5.00, 5.00),
                    (%1$s, NULL, 1, 0, NULL, NULL, NULL),
                    (%2$s, 'flower', 1, 0, 8.00, 8.00, 8.00)$$, :store_id, :other_id),
    'Should sum up each store''s categories over the products not missing');
SELECT results_eq(
    format($$SELECT dispensary_id, name, last_crawled_at, products, missing_products, latest_payload_id,
                    latest_payload_fetched_at
             FROM mv_store_freshness WHERE dispensary_id IN (%s, %s) ORDER BY dispensary_id$$, :store_id, :other_id),
    format($$VALUES (%1$s, 'T15 Menu Store'::text, %3$L::timestamptz, 5::bigint, 0::bigint, %5$s::bigint, %3$L::timestamptz),
                    (%2$s, 'T15 Other Store', %4$L, 1, 1, %6$s, %4$L)$$,
           :store_id, :other_id, :t3, :t2, :p3, :other_p2),
    'Should show each store''s last crawl, newest applied payload, and products on the menu and missing');
REFRESH MATERIALIZED VIEW mv_store_freshness WITH NO DATA;
SELECT lives_ok('SELECT refresh_analytics()', 'Should refresh a view that holds no data (plainly, the first time)');
SELECT is((SELECT products FROM mv_store_freshness WHERE dispensary_id = :store_id), 5::bigint,
          'Should have filled that view again');

/****************************************************************************/
-- as taskpool_worker: what the crawl handlers call

SELECT pg_temp.path(:store_id, :t4, 'worker') AS worker_path, pg_temp.path(:store_id, :t4, 'worker-bad') AS worker_bad_path \gset
SET ROLE taskpool_worker;

SELECT is(cardinality(upsert_discovered_stores('t15-platform', '[{"platform_store_id": "w-1", "name": "Worker Found"}]')),
          1, 'Should let taskpool_worker upsert discovered stores');
SELECT is((get_dispensary(:store_id)).name, 'T15 Menu Store', 'Should let taskpool_worker look a store up');
SELECT record_crawl_payload(:store_id, :t4, :'worker_path', 10, repeat('ef', 32)) AS worker_p \gset
SELECT is((get_crawl_payload(:worker_p)).status, 'saved', 'Should let taskpool_worker record and look up a payload');
SELECT is(apply_menu_payload(:worker_p, '[{"id": "a", "name": "Alpha 3.5g", "price": 10, "stock": 4}]') ->> 'missing',
          '4', 'Should let taskpool_worker apply a payload');
SELECT record_crawl_payload(:store_id, :t4, :'worker_bad_path', 10, repeat('ef', 32)) AS worker_bad \gset
SELECT lives_ok(format($$SELECT mark_payload_corrupt(%s, 'not JSON')$$, :worker_bad),
                'Should let taskpool_worker mark a payload corrupt');
SELECT lives_ok('SELECT refresh_analytics()', 'Should let taskpool_worker refresh the analytics views');
SELECT throws_ok(format('SELECT diff_payloads(%s, %s)', :p1, :p2),
    '42501', 'permission denied for function diff_payloads', 'Should refuse taskpool_worker diff_payloads');
SELECT throws_ok('SELECT count(*) FROM store_products', '42501', 'permission denied for table store_products',
    'Should refuse taskpool_worker a direct read of store_products');
SELECT throws_ok('SELECT count(*) FROM mv_store_freshness', '42501', 'permission denied for materialized view mv_store_freshness',
    'Should refuse taskpool_worker a direct read of the analytics views');

RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
