-- products_without_ids: a product its platform gives no id (issue 18, item 4). product_hash_id
-- is stable (a fixed value) and blind to what normalization removes; apply_menu_payload gives an
-- id-less product its hashed id, keeps the first of two that hash the same and reports the
-- other, keeps sizes, and refuses a platform id in the hashed ids' namespace; the same id-less
-- product in a later crawl keeps its id, so the diff and the snapshots see its price change.
BEGIN;
SELECT plan(24);

-- pg_temp.payload: records a payload of the store fetched at the time (tag: its file's microseconds).
CREATE FUNCTION pg_temp.payload(store_id integer, fetched_at timestamptz, tag integer)
RETURNS bigint
LANGUAGE sql
AS $$
    SELECT record_crawl_payload(payload.store_id, payload.fetched_at,
                                format('payloads/%s/store_%s_%s%sZ.json.gz',
                                       to_char(payload.fetched_at AT TIME ZONE 'UTC', 'YYYY/MM/DD'), payload.store_id,
                                       to_char(payload.fetched_at AT TIME ZONE 'UTC', 'YYYYMMDD"T"HH24MISS'),
                                       lpad(payload.tag::text, 6, '0')),
                                1000, encode(sha256(convert_to(payload.tag::text, 'UTF8')), 'hex'));
$$;

\set written_tables '''{raw_crawl_payloads, crawl_payload_products, store_products, store_product_snapshots}'''

/****************************************************************************/
-- product_hash_id

SELECT volatility_is('public', 'product_hash_id', ARRAY['text', 'text', 'text', 'text'], 'immutable',
    'Should make product_hash_id IMMUTABLE (the same components, the same id)');
-- The value is the documented rule's: sha256 of 'blue dream|acme|flower|3.5g'. A change here
-- re-ids every id-less product already stored.
SELECT is(product_hash_id('Blue Dream', 'Acme', 'Flower', '3.5g'),
    'hash:c28b17e10056a21b53f1c35e9f157bd5cd41b10d9ee83621ad9699f55576f699',
    'Should hash a product to a fixed id');
SELECT is(product_hash_id(E'\tBLUE   Dream \n', ' ACME', 'flower ', '3.5G'),
    product_hash_id('Blue Dream', 'Acme', 'Flower', '3.5g'),
    'Should not tell case, runs of whitespace or surrounding whitespace apart');
SELECT is(product_hash_id(E'\uFF22lue\u00A0Dream', 'Acme', 'Flower', '3.5g'),
    product_hash_id('Blue Dream', 'Acme', 'Flower', '3.5g'),
    'Should not tell Unicode compatibility forms apart (a full-width letter, a no-break space)');
SELECT is(product_hash_id('Café', NULL, NULL, NULL), product_hash_id(E'Cafe\u0301', '', ' ', ''),
    'Should not tell a composed accent from a combining one, nor NULL from blank');
SELECT isnt(product_hash_id('Blue Dream', 'Acme', 'Flower', '3.5g'),
    product_hash_id('Blue Dream', 'Acme', 'Flower', '7g'),
    'Should tell two sizes of a product apart');
SELECT isnt(product_hash_id('a|b', NULL, NULL, NULL), product_hash_id('a', 'b', NULL, NULL),
    'Should tell a | inside a component from the separator');
SELECT throws_ok($$SELECT product_hash_id('  ', 'Acme', NULL, NULL)$$, '22023',
    'product_hash_id needs a name, not ''  ''', 'Should refuse a blank name');
SELECT throws_ok($$SELECT product_hash_id(NULL, 'Acme', NULL, NULL)$$, '22023',
    'product_hash_id needs a name, not NULL', 'Should refuse a NULL name');

/****************************************************************************/
-- apply_menu_payload with id-less products

SELECT tests.make_store(name := 't61 store') AS store_id \gset
SELECT pg_temp.payload(:store_id, '2026-04-01 08:00:00+00', 1) AS p1 \gset
SELECT pg_temp.payload(:store_id, '2026-04-02 08:00:00+00', 2) AS p2 \gset

SELECT * FROM tests.rejects(
    format($$SELECT apply_menu_payload(%s, '[{"id": "hash:abc", "name": "A"}]')$$, :p1),
    '22023', 'products[0]: id "hash:abc" starts with hash:, which only ids hashed by product_hash_id do',
    'a platform id in the hashed ids'' namespace', tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT apply_menu_payload(%s, '[{"name": "A", "size": 3.5}]')$$, :p1),
    '22023', 'products[0]: size must be a string or null, not 3.5', 'a size that is a number',
    tables := :written_tables);
SELECT * FROM tests.rejects(
    format($$SELECT apply_menu_payload(%s, '[{"id": null, "name": " "}]')$$, :p1),
    '22023', 'products[0]: name must be a non-empty string, not " "', 'an id-less product without a name',
    tables := :written_tables);

SELECT is(apply_menu_payload(:p1, $$[
    {"id": "p-1", "name": "Platform Product", "size": "1g", "price": 5, "stock": 1},
    {"name": "Blue Dream", "brand": "Acme", "category": "Flower", "size": "3.5g", "price": 35, "stock": 4},
    {"id": null, "name": "House Pre-Roll", "size": "1g", "price": 8, "stock": 10},
    {"id": "  ", "name": "BLUE DREAM", "brand": "acme", "category": "flower", "size": "3.5G", "price": 30, "stock": 1},
    {"id": "", "name": "Mystery Gummies", "price": null, "stock": null}
]$$), format('{"products": 4, "added": 4, "updated": 0, "missing": 0, "snapshots": 4, "superseded_by": null,
              "hashed": 3, "duplicates": [{"index": 3, "id": "%s", "first": 1}]}',
             product_hash_id('Blue Dream', 'Acme', 'Flower', '3.5g'))::jsonb,
    'Should hash the ids of products without one (absent, null, blank), keep the first of two that hash the same and report the other');
SELECT results_eq(
    format($$SELECT platform_product_id, name, size, price FROM store_products
             WHERE dispensary_id = %s ORDER BY name$$, :store_id),
    $$VALUES (product_hash_id('Blue Dream', 'Acme', 'Flower', '3.5g'), 'Blue Dream'::text, '3.5g'::text, 35.00::numeric),
             (product_hash_id('House Pre-Roll', NULL, NULL, '1g'), 'House Pre-Roll', '1g', 8.00),
             (product_hash_id('Mystery Gummies', NULL, NULL, NULL), 'Mystery Gummies', NULL, NULL),
             ('p-1', 'Platform Product', '1g', 5.00)$$,
    'Should keep the products with their hashed ids and sizes, the first of the duplicates as it was');
SELECT is(
    (SELECT count(*)::integer FROM crawl_payload_products WHERE payload_id = :p1 AND platform_product_id LIKE 'hash:%'),
    3, 'Should record the payload''s id-less products under their hashed ids');

-- p2, the next day: the same id-less products, written differently; Blue Dream cheaper, the
-- pre-roll gone, a new one without an id.
SELECT is(apply_menu_payload(:p2, $$[
    {"id": "p-1", "name": "Platform Product", "size": "1g", "price": 5, "stock": 1},
    {"name": "  blue dream ", "brand": "ACME", "category": "flower", "size": "3.5g", "price": 32, "stock": 4},
    {"name": "Mystery Gummies", "price": null, "stock": null},
    {"name": "Sour Diesel", "brand": "Acme", "size": "3.5g", "price": 40, "stock": 2}
]$$), '{"products": 4, "added": 1, "updated": 1, "missing": 1, "snapshots": 4, "superseded_by": null,
        "hashed": 3, "duplicates": []}'::jsonb,
    'Should match id-less products to the ones of the crawl before by their hashed ids');
SELECT is(diff_payloads(:p1, :p2) -> 'diff',
    '{"added": 1, "removed": 1, "priceChanges": 1, "stockChanges": 0}'::jsonb,
    'Should diff id-less products like any other');
SELECT is(diff_payloads(:p1, :p2) #> '{details,priceChanges}',
    format('[{"id": "%s", "name": "  blue dream ", "from": 35.00, "to": 32.00}]',
           product_hash_id('Blue Dream', 'Acme', 'Flower', '3.5g'))::jsonb,
    'Should show an id-less product''s price change under its hashed id');
SELECT is(diff_payloads(:p1, :p2) #>> '{details,removed,0,id}', product_hash_id('House Pre-Roll', NULL, NULL, '1g'),
    'Should show the id-less product gone as removed');
SELECT results_eq(
    format($$SELECT price, captured_at FROM store_product_snapshots
             WHERE dispensary_id = %s AND platform_product_id = product_hash_id('Blue Dream', 'Acme', 'Flower', '3.5g')
             ORDER BY captured_at$$, :store_id),
    $$VALUES (35.00::numeric, '2026-04-01 08:00:00+00'::timestamptz), (32.00, '2026-04-02 08:00:00+00')$$,
    'Should keep one price history for an id-less product across crawls');
SELECT is(
    (SELECT missing_since FROM store_products
     WHERE dispensary_id = :store_id AND platform_product_id = product_hash_id('House Pre-Roll', NULL, NULL, '1g')),
    '2026-04-02 08:00:00+00'::timestamptz,
    'Should mark an id-less product absent from the next crawl missing');

SELECT * FROM finish();
ROLLBACK;
