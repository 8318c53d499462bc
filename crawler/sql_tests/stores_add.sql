-- stores_add: how an operator adds a store by hand, so that per-store tasks have one to name.
-- Structure, then adding stores (and enqueueing for one), then the refusals that write nothing,
-- then privileges.
BEGIN;
SELECT plan(18);

/****************************************************************************/
-- Structure

SELECT has_function('public', 'add_store', ARRAY['text', 'text', 'text', 'text', 'text'],
    'Should have add_store(name, platform, state_code, city, menu_url)');
SELECT function_returns('public', 'add_store', ARRAY['text', 'text', 'text', 'text', 'text'], 'dispensaries',
    'Should return the store row from add_store');
SELECT isnt_definer('public', 'add_store', ARRAY['text', 'text', 'text', 'text', 'text'],
    'Should run add_store with its caller''s privileges');

/****************************************************************************/
-- Behaviour

SELECT id AS bare FROM add_store('t30 Green Leaf') \gset
SELECT results_eq(
    format('SELECT name, platform, state_code, city, menu_url, active, platform_dispensary_id FROM dispensaries WHERE id = %s', :bare),
    $$VALUES ('t30 Green Leaf', NULL::text, NULL::text, NULL::text, NULL::text, true, NULL::text)$$,
    'Should add an active store with nothing but a name');
SELECT id AS full FROM add_store('t30 Blue Sky', platform := 't30-platform', state_code := 'CA', city := 'Oakland',
                                 menu_url := 'https://menus.example/t30/blue-sky') \gset
SELECT results_eq(
    format('SELECT name, platform, state_code, city, menu_url, active FROM dispensaries WHERE id = %s', :full),
    $$VALUES ('t30 Blue Sky', 't30-platform', 'CA', 'Oakland', 'https://menus.example/t30/blue-sky', true)$$,
    'Should add a store with every field given');
SELECT is((SELECT first_seen_at = taskpool_now() AND created_at = taskpool_now() FROM dispensaries WHERE id = :full), true,
    'Should date the store now on taskpool''s clock');
SELECT is((SELECT platform FROM enqueue_task('product_resync', dispensary_id := :full)), 't30-platform',
    'Should give tasks a store they can name, its platform theirs');

/****************************************************************************/
-- Refusals, each writing nothing

CREATE TEMPORARY TABLE before AS SELECT * FROM dispensaries;

SELECT throws_ok('SELECT add_store(NULL)', '22004', 'name is required', 'Should refuse a NULL name');
SELECT throws_ok($$SELECT add_store('  ')$$, '22023', 'name must not be blank, not ''  ''',
    'Should refuse a blank name');
SELECT throws_ok($$SELECT add_store('t30 x', platform := '')$$, '22023',
    'platform must be a name of 1 to 100 characters, not ''''', 'Should refuse a blank platform');
SELECT throws_ok(format('SELECT add_store(%L, platform := %L)', 't30 x', repeat('p', 101)), '22023',
    format('platform must be a name of 1 to 100 characters, not %L', repeat('p', 60)),
    'Should refuse a platform name over 100 characters');
SELECT throws_ok($$SELECT add_store('t30 x', state_code := 'ca')$$, '22023',
    'state_code must be two capital letters, not ''ca''', 'Should refuse a state code in lower case');
SELECT throws_ok($$SELECT add_store('t30 x', state_code := 'CAL')$$, '22023',
    'state_code must be two capital letters, not ''CAL''', 'Should refuse a state code of three letters');
SELECT throws_ok($$SELECT add_store('t30 x', menu_url := ' ')$$, '22023',
    'menu_url must not be blank, not '' ''', 'Should refuse a blank menu URL');
SELECT throws_ok($$SELECT add_store('t30 x', menu_url := 'https://menus.example/t30/blue-sky')$$, '23505',
    format('menu_url %L is dispensary %s already', 'https://menus.example/t30/blue-sky', :full),
    'Should refuse a menu URL another store has, naming that store');
SELECT set_eq('SELECT * FROM dispensaries', 'SELECT * FROM before',
    'Should have added no store with the refused calls');

/****************************************************************************/
-- Privileges

SELECT function_privs_are('public', 'add_store', ARRAY['text', 'text', 'text', 'text', 'text'], 'taskpool_worker',
    ARRAY[]::text[], 'Should not let taskpool_worker execute add_store');
SET ROLE taskpool_worker;
SELECT throws_ok($$SELECT add_store('t30 by a worker')$$, '42501', NULL,
    'Should refuse add_store to taskpool_worker');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
