-- Structure of the crawler's half of the schema: the store columns of dispensaries, the payload,
-- product and snapshot tables, the analytics views, the crawler functions and their privileges;
-- then the table invariants themselves, fired by raw writes that bypass the functions.
BEGIN;
SELECT plan(119);

/****************************************************************************/
-- dispensaries: the crawler's columns

SELECT col_type_is('dispensaries', 'platform_dispensary_id', 'text', 'Should type dispensaries.platform_dispensary_id as text');
SELECT col_is_null('dispensaries', 'platform_dispensary_id', 'Should allow a NULL platform_dispensary_id (stores added by hand)');
SELECT col_type_is('dispensaries', 'menu_url', 'text', 'Should type dispensaries.menu_url as text');
SELECT col_type_is('dispensaries', 'city', 'text', 'Should type dispensaries.city as text');
SELECT col_type_is('dispensaries', 'first_seen_at', 'timestamp with time zone',
                   'Should type dispensaries.first_seen_at as timestamptz');
SELECT col_not_null('dispensaries', 'first_seen_at', 'Should make dispensaries.first_seen_at NOT NULL');
SELECT col_default_is('dispensaries', 'first_seen_at', 'taskpool_now()',
                      'Should default dispensaries.first_seen_at to taskpool_now()');
SELECT col_type_is('dispensaries', 'last_crawled_at', 'timestamp with time zone',
                   'Should type dispensaries.last_crawled_at as timestamptz');
SELECT col_is_null('dispensaries', 'last_crawled_at', 'Should allow a NULL last_crawled_at (never crawled)');
SELECT col_is_unique('dispensaries', ARRAY['platform', 'platform_dispensary_id'],
                     'Should make (platform, platform_dispensary_id) unique');
SELECT col_is_unique('dispensaries', ARRAY['menu_url'], 'Should make dispensaries.menu_url unique');
SELECT results_eq(
    $$SELECT conname::text COLLATE "default", pg_get_constraintdef(oid), obj_description(oid, 'pg_constraint') ~ 'upsert'
      FROM pg_constraint
      WHERE conrelid = 'dispensaries'::regclass AND contype = 'u'
      ORDER BY conname$$,
    $$VALUES ('dispensaries_one_per_menu_url', 'UNIQUE (menu_url)', false),
             ('dispensaries_one_per_platform_id', 'UNIQUE (platform, platform_dispensary_id)', true)$$,
    'Should name the unique rules of dispensaries, and say which one is the upsert key');

/****************************************************************************/
-- raw_crawl_payloads

SELECT has_table('raw_crawl_payloads', 'Should have table raw_crawl_payloads');
SELECT columns_are('raw_crawl_payloads', ARRAY[
    'id', 'dispensary_id', 'fetched_at', 'storage_path', 'size_bytes', 'sha256', 'product_count', 'status',
    'error_message', 'applied_at', 'apply_result'],
    'Should give raw_crawl_payloads exactly the documented columns');
SELECT col_is_pk('raw_crawl_payloads', 'id', 'Should key raw_crawl_payloads by id');
SELECT col_type_is('raw_crawl_payloads', 'id', 'bigint', 'Should type raw_crawl_payloads.id as bigint');
SELECT is((SELECT attidentity::text FROM pg_attribute WHERE attrelid = 'raw_crawl_payloads'::regclass AND attname = 'id'),
          'a', 'Should make raw_crawl_payloads.id an identity GENERATED ALWAYS');
SELECT col_type_is('raw_crawl_payloads', 'dispensary_id', 'integer', 'Should type raw_crawl_payloads.dispensary_id as integer');
SELECT col_not_null('raw_crawl_payloads', 'dispensary_id', 'Should make raw_crawl_payloads.dispensary_id NOT NULL');
SELECT fk_ok('raw_crawl_payloads', 'dispensary_id', 'dispensaries', 'id',
             'Should reference dispensaries from raw_crawl_payloads.dispensary_id');
SELECT col_type_is('raw_crawl_payloads', 'fetched_at', 'timestamp with time zone', 'Should type fetched_at as timestamptz');
SELECT col_not_null('raw_crawl_payloads', 'fetched_at', 'Should make raw_crawl_payloads.fetched_at NOT NULL');
SELECT col_type_is('raw_crawl_payloads', 'storage_path', 'text', 'Should type storage_path as text');
SELECT col_not_null('raw_crawl_payloads', 'storage_path', 'Should make raw_crawl_payloads.storage_path NOT NULL');
SELECT col_is_unique('raw_crawl_payloads', ARRAY['storage_path'], 'Should make raw_crawl_payloads.storage_path unique');
SELECT col_type_is('raw_crawl_payloads', 'size_bytes', 'integer', 'Should type size_bytes as integer');
SELECT col_not_null('raw_crawl_payloads', 'size_bytes', 'Should make raw_crawl_payloads.size_bytes NOT NULL');
SELECT col_type_is('raw_crawl_payloads', 'sha256', 'text', 'Should type sha256 as text');
SELECT col_not_null('raw_crawl_payloads', 'sha256', 'Should make raw_crawl_payloads.sha256 NOT NULL');
SELECT col_type_is('raw_crawl_payloads', 'product_count', 'integer', 'Should type product_count as integer');
SELECT col_is_null('raw_crawl_payloads', 'product_count', 'Should allow a NULL product_count (not parsed yet)');
SELECT col_type_is('raw_crawl_payloads', 'status', 'text', 'Should type raw_crawl_payloads.status as text');
SELECT col_not_null('raw_crawl_payloads', 'status', 'Should make raw_crawl_payloads.status NOT NULL');
SELECT col_default_is('raw_crawl_payloads', 'status', 'saved'::text, 'Should default raw_crawl_payloads.status to saved');
SELECT col_type_is('raw_crawl_payloads', 'error_message', 'text', 'Should type error_message as text');
SELECT col_type_is('raw_crawl_payloads', 'applied_at', 'timestamp with time zone', 'Should type applied_at as timestamptz');
SELECT col_type_is('raw_crawl_payloads', 'apply_result', 'jsonb', 'Should type apply_result as jsonb');
SELECT indexes_are('raw_crawl_payloads', ARRAY[
    'raw_crawl_payloads_pkey', 'raw_crawl_payloads_one_per_storage_path', 'raw_crawl_payloads_by_store_idx',
    'raw_crawl_payloads_fetched_at_idx'],
    'Should give raw_crawl_payloads exactly the documented indexes');
SELECT is((SELECT pg_get_indexdef('raw_crawl_payloads_by_store_idx'::regclass)
           LIKE '%(dispensary_id, fetched_at DESC)'), true,
          'Should index a store''s payloads newest first');

/****************************************************************************/
-- crawl_payload_products

SELECT has_table('crawl_payload_products', 'Should have table crawl_payload_products');
SELECT columns_are('crawl_payload_products', ARRAY[
    'payload_id', 'platform_product_id', 'name', 'brand', 'category', 'price', 'stock', 'size'],
    'Should give crawl_payload_products exactly the documented columns');
SELECT col_is_pk('crawl_payload_products', ARRAY['payload_id', 'platform_product_id'],
                 'Should key crawl_payload_products by (payload_id, platform_product_id)');
SELECT fk_ok('crawl_payload_products', 'payload_id', 'raw_crawl_payloads', 'id',
             'Should reference raw_crawl_payloads from crawl_payload_products.payload_id');
SELECT col_type_is('crawl_payload_products', 'platform_product_id', 'text', 'Should type platform_product_id as text');
SELECT col_not_null('crawl_payload_products', 'name', 'Should make crawl_payload_products.name NOT NULL');
SELECT col_type_is('crawl_payload_products', 'price', 'numeric(10,2)', 'Should type crawl_payload_products.price as numeric(10,2)');
SELECT col_is_null('crawl_payload_products', 'price', 'Should allow a NULL price (the menu gave none)');
SELECT col_type_is('crawl_payload_products', 'stock', 'integer', 'Should type crawl_payload_products.stock as integer');

/****************************************************************************/
-- store_products

SELECT has_table('store_products', 'Should have table store_products');
SELECT columns_are('store_products', ARRAY[
    'dispensary_id', 'platform_product_id', 'name', 'brand', 'category', 'price', 'stock', 'in_stock',
    'first_seen_at', 'last_seen_at', 'missing_since', 'last_payload_id', 'size'],
    'Should give store_products exactly the documented columns');
SELECT col_is_pk('store_products', ARRAY['dispensary_id', 'platform_product_id'],
                 'Should key store_products by (dispensary_id, platform_product_id)');
SELECT fk_ok('store_products', 'dispensary_id', 'dispensaries', 'id',
             'Should reference dispensaries from store_products.dispensary_id');
SELECT fk_ok('store_products', 'last_payload_id', 'raw_crawl_payloads', 'id',
             'Should reference raw_crawl_payloads from store_products.last_payload_id');
SELECT col_type_is('store_products', 'price', 'numeric(10,2)', 'Should type store_products.price as numeric(10,2)');
SELECT col_type_is('store_products', 'stock', 'integer', 'Should type store_products.stock as integer');
SELECT col_type_is('store_products', 'in_stock', 'boolean', 'Should type store_products.in_stock as boolean');
SELECT is((SELECT a.attgenerated::text || ':' || pg_get_expr(d.adbin, d.adrelid)
           FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
           WHERE a.attrelid = 'store_products'::regclass AND a.attname = 'in_stock'),
          's:(stock > 0)', 'Should generate store_products.in_stock as stock > 0, stored');
SELECT col_not_null('store_products', 'first_seen_at', 'Should make store_products.first_seen_at NOT NULL');
SELECT col_not_null('store_products', 'last_seen_at', 'Should make store_products.last_seen_at NOT NULL');
SELECT col_type_is('store_products', 'missing_since', 'timestamp with time zone', 'Should type missing_since as timestamptz');
SELECT col_is_null('store_products', 'missing_since', 'Should allow a NULL missing_since (on the menu)');

/****************************************************************************/
-- store_product_snapshots

SELECT has_table('store_product_snapshots', 'Should have table store_product_snapshots');
SELECT columns_are('store_product_snapshots', ARRAY[
    'id', 'dispensary_id', 'platform_product_id', 'price', 'stock', 'captured_at', 'payload_id', 'dedupe_key'],
    'Should give store_product_snapshots exactly the documented columns');
SELECT col_is_pk('store_product_snapshots', 'id', 'Should key store_product_snapshots by id');
SELECT col_is_unique('store_product_snapshots', ARRAY['dedupe_key'], 'Should make store_product_snapshots.dedupe_key unique');
SELECT col_not_null('store_product_snapshots', 'dedupe_key', 'Should make store_product_snapshots.dedupe_key NOT NULL');
SELECT col_not_null('store_product_snapshots', 'captured_at', 'Should make store_product_snapshots.captured_at NOT NULL');
SELECT fk_ok('store_product_snapshots', ARRAY['dispensary_id', 'platform_product_id'],
             'store_products', ARRAY['dispensary_id', 'platform_product_id'],
             'Should reference store_products from a snapshot');
SELECT fk_ok('store_product_snapshots', 'payload_id', 'raw_crawl_payloads', 'id',
             'Should reference raw_crawl_payloads from store_product_snapshots.payload_id');
SELECT has_index('store_product_snapshots', 'store_product_snapshots_history_idx',
                 ARRAY['dispensary_id', 'platform_product_id', 'captured_at'],
                 'Should index a product''s snapshots in time order');

/****************************************************************************/
-- foreign keys: what a delete does

SELECT results_eq(
    $$SELECT conrelid::regclass::text, conname::text COLLATE "default", confrelid::regclass::text, confdeltype::text
      FROM pg_constraint
      WHERE contype = 'f'
        AND conrelid IN ('raw_crawl_payloads'::regclass, 'crawl_payload_products'::regclass,
                         'store_products'::regclass, 'store_product_snapshots'::regclass)
      ORDER BY 1, 2$$,
    $$VALUES ('crawl_payload_products', 'crawl_payload_products_payload_id_fkey', 'raw_crawl_payloads', 'c'),
             ('raw_crawl_payloads', 'raw_crawl_payloads_dispensary_id_fkey', 'dispensaries', 'c'),
             ('store_product_snapshots', 'store_product_snapshots_payload_id_fkey', 'raw_crawl_payloads', 'n'),
             ('store_product_snapshots', 'store_product_snapshots_product_fkey', 'store_products', 'c'),
             ('store_products', 'store_products_dispensary_id_fkey', 'dispensaries', 'c'),
             ('store_products', 'store_products_last_payload_id_fkey', 'raw_crawl_payloads', 'n')$$,
    'Should cascade deletes of stores and payloads to their rows, and keep history when a payload goes');

/****************************************************************************/
-- named CHECK constraints

SELECT results_eq(
    $$SELECT conrelid::regclass::text, conname::text COLLATE "default" FROM pg_constraint
      WHERE contype = 'c'
        AND conrelid IN ('raw_crawl_payloads'::regclass, 'crawl_payload_products'::regclass,
                         'store_products'::regclass, 'store_product_snapshots'::regclass)
      ORDER BY 1, 2$$,
    $$VALUES
        ('crawl_payload_products', 'crawl_payload_products_price_not_negative'),
        ('crawl_payload_products', 'crawl_payload_products_stock_not_negative'),
        ('raw_crawl_payloads', 'raw_crawl_payloads_applied_iff_applied_at'),
        ('raw_crawl_payloads', 'raw_crawl_payloads_corrupt_iff_error'),
        ('raw_crawl_payloads', 'raw_crawl_payloads_product_count_not_negative'),
        ('raw_crawl_payloads', 'raw_crawl_payloads_sha256_is_hex'),
        ('raw_crawl_payloads', 'raw_crawl_payloads_size_bytes_positive'),
        ('raw_crawl_payloads', 'raw_crawl_payloads_status_known'),
        ('raw_crawl_payloads', 'raw_crawl_payloads_storage_path_not_blank'),
        ('store_product_snapshots', 'store_product_snapshots_dedupe_key_is_sha256'),
        ('store_product_snapshots', 'store_product_snapshots_price_not_negative'),
        ('store_product_snapshots', 'store_product_snapshots_stock_not_negative'),
        ('store_products', 'store_products_missing_after_seen'),
        ('store_products', 'store_products_price_not_negative'),
        ('store_products', 'store_products_seen_in_order'),
        ('store_products', 'store_products_stock_not_negative')$$,
    'Should have exactly the named CHECK constraints on the crawler tables');

/****************************************************************************/
-- analytics views

SELECT has_materialized_view('mv_store_category_prices', 'Should have materialized view mv_store_category_prices');
SELECT columns_are('mv_store_category_prices', ARRAY[
    'dispensary_id', 'category', 'products', 'in_stock', 'min_price', 'avg_price', 'max_price'],
    'Should give mv_store_category_prices exactly the documented columns');
SELECT has_index('mv_store_category_prices', 'mv_store_category_prices_key_idx', ARRAY['dispensary_id', 'category'],
                 'Should index mv_store_category_prices by (dispensary_id, category)');
SELECT index_is_unique('public', 'mv_store_category_prices', 'mv_store_category_prices_key_idx',
                       'Should make the mv_store_category_prices key unique (REFRESH CONCURRENTLY needs it)');
SELECT is((SELECT indnullsnotdistinct FROM pg_index WHERE indexrelid = 'mv_store_category_prices_key_idx'::regclass),
          true, 'Should count the uncategorized (NULL) group once per store in that key');
SELECT has_materialized_view('mv_store_freshness', 'Should have materialized view mv_store_freshness');
SELECT columns_are('mv_store_freshness', ARRAY[
    'dispensary_id', 'name', 'platform', 'state_code', 'active', 'last_crawled_at', 'products', 'missing_products',
    'latest_payload_id', 'latest_payload_fetched_at'],
    'Should give mv_store_freshness exactly the documented columns');
SELECT has_index('mv_store_freshness', 'mv_store_freshness_key_idx', ARRAY['dispensary_id'],
                 'Should index mv_store_freshness by dispensary_id');
SELECT index_is_unique('public', 'mv_store_freshness', 'mv_store_freshness_key_idx',
                       'Should make the mv_store_freshness key unique (REFRESH CONCURRENTLY needs it)');

/****************************************************************************/
-- functions

SELECT has_function('public', 'upsert_discovered_stores', ARRAY['text', 'jsonb'],
                    'Should have upsert_discovered_stores(platform, stores)');
SELECT function_returns('public', 'upsert_discovered_stores', ARRAY['text', 'jsonb'], 'integer[]',
                        'Should return the new stores'' ids from upsert_discovered_stores');
SELECT has_function('public', 'record_crawl_payload',
                    ARRAY['integer', 'timestamp with time zone', 'text', 'integer', 'text'],
                    'Should have record_crawl_payload(dispensary_id, fetched_at, storage_path, size_bytes, sha256)');
SELECT function_returns('public', 'record_crawl_payload',
                        ARRAY['integer', 'timestamp with time zone', 'text', 'integer', 'text'], 'bigint',
                        'Should return the payload id from record_crawl_payload');
SELECT has_function('public', 'mark_payload_corrupt', ARRAY['bigint', 'text'],
                    'Should have mark_payload_corrupt(payload_id, error_message)');
SELECT function_returns('public', 'mark_payload_corrupt', ARRAY['bigint', 'text'], 'void',
                        'Should return nothing from mark_payload_corrupt');
SELECT has_function('public', 'apply_menu_payload', ARRAY['bigint', 'jsonb'],
                    'Should have apply_menu_payload(payload_id, products)');
SELECT function_returns('public', 'apply_menu_payload', ARRAY['bigint', 'jsonb'], 'jsonb',
                        'Should return the counts as jsonb from apply_menu_payload');
SELECT has_function('public', 'get_crawl_payload', ARRAY['bigint'], 'Should have get_crawl_payload(payload_id)');
SELECT function_returns('public', 'get_crawl_payload', ARRAY['bigint'], 'raw_crawl_payloads',
                        'Should return the payload row from get_crawl_payload');
SELECT has_function('public', 'get_dispensary', ARRAY['integer'], 'Should have get_dispensary(dispensary_id)');
SELECT function_returns('public', 'get_dispensary', ARRAY['integer'], 'dispensaries',
                        'Should return the store row from get_dispensary');
SELECT has_function('public', 'diff_payloads', ARRAY['bigint', 'bigint'],
                    'Should have diff_payloads(from_payload_id, to_payload_id)');
SELECT function_returns('public', 'diff_payloads', ARRAY['bigint', 'bigint'], 'jsonb',
                        'Should return the diff as jsonb from diff_payloads');
SELECT has_function('public', 'diff_latest_payloads', ARRAY['integer'], 'Should have diff_latest_payloads(dispensary_id)');
SELECT function_returns('public', 'diff_latest_payloads', ARRAY['integer'], 'jsonb',
                        'Should return the diff as jsonb from diff_latest_payloads');
SELECT has_function('public', 'refresh_analytics', ARRAY[]::name[], 'Should have refresh_analytics()');
SELECT function_returns('public', 'refresh_analytics', ARRAY[]::name[], 'jsonb',
                        'Should return the row counts as jsonb from refresh_analytics');
SELECT results_eq(
    $$SELECT p.proname::text COLLATE "default", p.provolatile::text, p.prosecdef,
             coalesce((SELECT c FROM unnest(p.proconfig) AS c WHERE c LIKE 'search_path=%'), '') COLLATE "default"
      FROM pg_proc p
      WHERE p.pronamespace = 'public'::regnamespace
        AND p.proname IN ('upsert_discovered_stores', 'record_crawl_payload', 'mark_payload_corrupt',
                          'apply_menu_payload', 'get_crawl_payload', 'get_dispensary', 'diff_payloads',
                          'diff_latest_payloads', 'refresh_analytics')
      ORDER BY p.proname$$,
    $$VALUES ('apply_menu_payload', 'v', true, 'search_path=public, pg_temp'),
             ('diff_latest_payloads', 's', false, ''),
             ('diff_payloads', 's', false, ''),
             ('get_crawl_payload', 's', true, 'search_path=public, pg_temp'),
             ('get_dispensary', 's', true, 'search_path=public, pg_temp'),
             ('mark_payload_corrupt', 'v', true, 'search_path=public, pg_temp'),
             ('record_crawl_payload', 'v', true, 'search_path=public, pg_temp'),
             ('refresh_analytics', 'v', true, 'search_path=public, pg_temp'),
             ('upsert_discovered_stores', 'v', true, 'search_path=public, pg_temp')$$,
    'Should make the worker-side crawler functions SECURITY DEFINER with a pinned search_path, and the diffs STABLE');

/****************************************************************************/
-- privileges

SELECT results_eq(
    $$SELECT p.proname::text COLLATE "default", has_function_privilege('taskpool_worker', p.oid, 'EXECUTE')
      FROM pg_proc p
      WHERE p.pronamespace = 'public'::regnamespace
        AND p.proname IN ('upsert_discovered_stores', 'record_crawl_payload', 'mark_payload_corrupt',
                          'apply_menu_payload', 'get_crawl_payload', 'get_dispensary', 'diff_payloads',
                          'diff_latest_payloads', 'refresh_analytics')
      ORDER BY p.proname$$,
    $$VALUES ('apply_menu_payload', true), ('diff_latest_payloads', false), ('diff_payloads', false),
             ('get_crawl_payload', true), ('get_dispensary', true), ('mark_payload_corrupt', true),
             ('record_crawl_payload', true), ('refresh_analytics', true), ('upsert_discovered_stores', true)$$,
    'Should let taskpool_worker execute the functions the crawl handlers call, and not the diffs');
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text
      FROM pg_proc p
      WHERE p.pronamespace = 'public'::regnamespace
        AND p.proname IN ('upsert_discovered_stores', 'record_crawl_payload', 'mark_payload_corrupt',
                          'apply_menu_payload', 'get_crawl_payload', 'get_dispensary', 'diff_payloads',
                          'diff_latest_payloads', 'refresh_analytics')
        AND (SELECT bool_or(a.grantee = 0) FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a)$$,
    'Should let PUBLIC execute none of the crawler functions');
SELECT table_privs_are('raw_crawl_payloads', 'taskpool_worker', ARRAY[]::text[],
    'Should give taskpool_worker no privilege on raw_crawl_payloads');
SELECT table_privs_are('crawl_payload_products', 'taskpool_worker', ARRAY[]::text[],
    'Should give taskpool_worker no privilege on crawl_payload_products');
SELECT table_privs_are('store_products', 'taskpool_worker', ARRAY[]::text[],
    'Should give taskpool_worker no privilege on store_products');
SELECT table_privs_are('store_product_snapshots', 'taskpool_worker', ARRAY[]::text[],
    'Should give taskpool_worker no privilege on store_product_snapshots');
SELECT is(has_table_privilege('taskpool_worker', 'mv_store_category_prices', 'SELECT')
          OR has_table_privilege('taskpool_worker', 'mv_store_freshness', 'SELECT'), false,
          'Should give taskpool_worker no read of the analytics views');

/****************************************************************************/
-- invariants, by raw writes that bypass the functions

SELECT tests.make_store(name := 'Schema Store') AS store_id \gset
INSERT INTO raw_crawl_payloads (dispensary_id, fetched_at, storage_path, size_bytes, sha256)
VALUES (:store_id, now(), 'payloads/t14/raw.json.gz', 10, repeat('a', 64))
RETURNING id AS payload_id \gset

SELECT throws_ok(
    $$UPDATE dispensaries SET platform = NULL, platform_dispensary_id = 'x-1' WHERE name = 'Schema Store'$$,
    '23514', 'new row for relation "dispensaries" violates check constraint "dispensaries_platform_id_needs_platform"',
    'Should refuse a platform id without a platform (the upsert key would not be unique)');
SELECT throws_ok(
    format($$INSERT INTO raw_crawl_payloads (dispensary_id, fetched_at, storage_path, size_bytes, sha256)
             VALUES (%s, now(), 'payloads/t14/upper.json.gz', 10, repeat('A', 64))$$, :store_id),
    '23514', 'new row for relation "raw_crawl_payloads" violates check constraint "raw_crawl_payloads_sha256_is_hex"',
    'Should refuse a sha256 that is not 64 lower-case hex digits');
SELECT throws_ok(
    format($$INSERT INTO raw_crawl_payloads (dispensary_id, fetched_at, storage_path, size_bytes, sha256)
             VALUES (%s, now(), 'payloads/t14/empty.json.gz', 0, repeat('a', 64))$$, :store_id),
    '23514', 'new row for relation "raw_crawl_payloads" violates check constraint "raw_crawl_payloads_size_bytes_positive"',
    'Should refuse an empty payload file');
SELECT throws_ok(
    format($$INSERT INTO raw_crawl_payloads (dispensary_id, fetched_at, storage_path, size_bytes, sha256)
             VALUES (%s, now(), 'payloads/t14/raw.json.gz', 10, repeat('b', 64))$$, :store_id),
    '23505', 'duplicate key value violates unique constraint "raw_crawl_payloads_one_per_storage_path"',
    'Should refuse a second payload at the same storage path');
SELECT throws_ok(
    format($$UPDATE raw_crawl_payloads SET status = 'parsed' WHERE id = %s$$, :payload_id),
    '23514', 'new row for relation "raw_crawl_payloads" violates check constraint "raw_crawl_payloads_status_known"',
    'Should refuse an unknown payload status');
SELECT throws_ok(
    format($$UPDATE raw_crawl_payloads SET status = 'applied' WHERE id = %s$$, :payload_id),
    '23514', 'new row for relation "raw_crawl_payloads" violates check constraint "raw_crawl_payloads_applied_iff_applied_at"',
    'Should refuse an applied payload without applied_at, product_count and apply_result');
SELECT throws_ok(
    format($$UPDATE raw_crawl_payloads SET status = 'corrupt' WHERE id = %s$$, :payload_id),
    '23514', 'new row for relation "raw_crawl_payloads" violates check constraint "raw_crawl_payloads_corrupt_iff_error"',
    'Should refuse a corrupt payload without its error');
SELECT throws_ok(
    format($$INSERT INTO crawl_payload_products (payload_id, platform_product_id, name, price)
             VALUES (%s, 'p', 'P', -0.01)$$, :payload_id),
    '23514', 'new row for relation "crawl_payload_products" violates check constraint "crawl_payload_products_price_not_negative"',
    'Should refuse a negative price in a payload');
SELECT throws_ok(
    format($$INSERT INTO store_products (dispensary_id, platform_product_id, name, stock, first_seen_at, last_seen_at)
             VALUES (%s, 'p', 'P', -1, now(), now())$$, :store_id),
    '23514', 'new row for relation "store_products" violates check constraint "store_products_stock_not_negative"',
    'Should refuse a negative stock');
SELECT throws_ok(
    format($$INSERT INTO store_products (dispensary_id, platform_product_id, name, first_seen_at, last_seen_at,
                                         missing_since)
             VALUES (%s, 'p', 'P', now() - interval '1 day', now(), now() - interval '1 hour')$$, :store_id),
    '23514', 'new row for relation "store_products" violates check constraint "store_products_missing_after_seen"',
    'Should refuse a product gone missing before it was last seen');
SELECT throws_ok(
    format($$INSERT INTO store_product_snapshots (dispensary_id, platform_product_id, captured_at, dedupe_key)
             VALUES (%s, 'nowhere', now(), repeat('c', 64))$$, :store_id),
    '23503', 'insert or update on table "store_product_snapshots" violates foreign key constraint "store_product_snapshots_product_fkey"',
    'Should refuse a snapshot of a product the store does not have');
SELECT lives_ok(
    'REFRESH MATERIALIZED VIEW CONCURRENTLY mv_store_freshness',
    'Should refresh mv_store_freshness concurrently inside a transaction block');

SELECT * FROM finish();
ROLLBACK;
