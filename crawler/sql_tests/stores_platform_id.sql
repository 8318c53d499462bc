-- stores_platform_id: what entry_point_discovery calls once it has resolved a store's menu
-- URL on its platform. Structure, then recording an id (again: a no-op), then the refusals that
-- write nothing, then the call as taskpool_worker.
BEGIN;
SELECT plan(17);

/****************************************************************************/
-- Structure

SELECT has_function('public', 'set_store_platform_id', ARRAY['integer', 'text'],
    'Should have set_store_platform_id(dispensary_id, platform_dispensary_id)');
SELECT function_returns('public', 'set_store_platform_id', ARRAY['integer', 'text'], 'dispensaries',
    'Should return the store row from set_store_platform_id');
SELECT is_definer('public', 'set_store_platform_id', ARRAY['integer', 'text'],
    'Should make set_store_platform_id SECURITY DEFINER');
SELECT is((SELECT c FROM pg_proc p, unnest(p.proconfig) AS c
           WHERE p.oid = 'set_store_platform_id(integer, text)'::regprocedure AND c LIKE 'search_path=%'),
          'search_path=public, pg_temp', 'Should pin the search_path of set_store_platform_id');

/****************************************************************************/
-- Behaviour

INSERT INTO dispensaries (name, platform, menu_url)
VALUES ('t18 by hand', 't18-platform', 'https://menus.example/t18/by-hand') RETURNING id AS store \gset
INSERT INTO dispensaries (name, platform, platform_dispensary_id)
VALUES ('t18 known', 't18-platform', 'known-1') RETURNING id AS known \gset
INSERT INTO dispensaries (name) VALUES ('t18 no platform') RETURNING id AS bare \gset

SELECT results_eq(
    format('SELECT id, platform, platform_dispensary_id, menu_url FROM set_store_platform_id(%s, %L)', :store, 's-18'),
    format('VALUES (%s, %L, %L, %L)', :store, 't18-platform', 's-18', 'https://menus.example/t18/by-hand'),
    'Should record the platform id and return the store row');
SELECT is((SELECT platform_dispensary_id FROM dispensaries WHERE id = :store), 's-18',
    'Should store the platform id on the store');
SELECT results_eq(
    format('SELECT id, platform_dispensary_id FROM set_store_platform_id(%s, %L)', :store, 's-18'),
    format('VALUES (%s, %L)', :store, 's-18'),
    'Should answer a repeated call with the same id with the row, unchanged');

/****************************************************************************/
-- Refusals, each writing nothing

CREATE TEMPORARY TABLE before AS SELECT * FROM dispensaries;

SELECT throws_ok(format('SELECT set_store_platform_id(%s, %L)', :store, 's-19'), '55000',
    format('dispensary %s is t18-platform store ''s-18'' already, not ''s-19''', :store),
    'Should refuse to change a store''s platform id');
SELECT throws_ok(format('SELECT set_store_platform_id(%s, %L)', :store, 'known-1'), '55000', NULL,
    'Should refuse another store''s id for a store that has one');
UPDATE dispensaries SET platform_dispensary_id = NULL WHERE id = :store;
SELECT throws_ok(format('SELECT set_store_platform_id(%s, %L)', :store, 'known-1'), '23505',
    format('t18-platform store ''known-1'' is dispensary %s already', :known),
    'Should refuse an id another store of the platform has');
UPDATE dispensaries SET platform_dispensary_id = 's-18' WHERE id = :store;
SELECT throws_ok(format('SELECT set_store_platform_id(%s, %L)', :bare, 'x-1'), '22023',
    format('dispensary %s has no platform: a platform id needs one', :bare),
    'Should refuse a platform id for a store without a platform');
SELECT throws_ok('SELECT set_store_platform_id(-1, ''x-1'')', 'P0002', 'dispensary -1 does not exist',
    'Should refuse an unknown store');
SELECT throws_ok(format('SELECT set_store_platform_id(%s, NULL)', :store), '22004',
    'dispensary_id and platform_dispensary_id are required', 'Should refuse a NULL platform id');
SELECT throws_ok(format('SELECT set_store_platform_id(%s, %L)', :bare, '  '), '22023',
    'platform_dispensary_id must be a non-empty string of at most 255 characters, not ''  ''',
    'Should refuse a blank platform id');
SELECT set_eq('SELECT * FROM dispensaries', 'SELECT * FROM before',
    'Should have changed no store with the refused calls');

/****************************************************************************/
-- Privileges

SELECT function_privs_are('public', 'set_store_platform_id', ARRAY['integer', 'text'], 'taskpool_worker',
    ARRAY['EXECUTE'], 'Should let taskpool_worker execute set_store_platform_id');
UPDATE dispensaries SET platform_dispensary_id = NULL WHERE id = :store;
SET ROLE taskpool_worker;
SELECT is((SELECT platform_dispensary_id FROM set_store_platform_id(:store, 's-20')), 's-20',
    'Should record a platform id when called as taskpool_worker');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
