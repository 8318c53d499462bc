-- resync_plan_skips: what the operator CLI needs to say what it did (issue 12, item 11):
-- generate_resync_plan plans a day as generate_resync_tasks does and says why it skipped the
-- stores it did not plan. (The prune dry run, the core's, is sql_tests/prune_dry_run.sql.)
BEGIN;
SELECT plan(12);

/****************************************************************************/
-- structure

SELECT has_function('public', 'generate_resync_plan', ARRAY['integer', 'date', 'text', 'integer'],
    'Should have generate_resync_plan(batches, day, time_zone, priority)');
SELECT volatility_is('public', 'generate_resync_plan', ARRAY['integer', 'date', 'text', 'integer'], 'volatile',
    'Should make generate_resync_plan VOLATILE (it writes)');

/****************************************************************************/
-- generate_resync_plan: the stores it planned and the ones it skipped, by reason

-- Only this file's stores are active while it runs (this rolls back).
UPDATE dispensaries SET active = false WHERE active;
SELECT tests.make_store(name := 't35 a') AS store_a \gset
SELECT tests.make_store(name := 't35 b') AS store_b \gset
SELECT tests.make_store(name := 't35 c') AS store_c \gset
SELECT tests.make_store(name := 't35 closed', active := false) AS store_closed \gset

SELECT results_eq($$SELECT * FROM generate_resync_plan(2, date '2030-01-01', 'UTC')$$,
    $$VALUES (3, 0, 0)$$,
    'Should plan every active store of a new day, skipping none');
SELECT results_eq($$SELECT * FROM generate_resync_plan(2, date '2030-01-01', 'UTC')$$,
    $$VALUES (0, 3, 0)$$,
    'Should skip every store of a day planned before, as already planned');
SELECT results_eq($$SELECT * FROM generate_resync_plan(2, date '2030-01-02', 'UTC')$$,
    $$VALUES (0, 0, 3)$$,
    'Should skip the stores of a new day whose resync of the day before is still pending, as under way');

SELECT tests.make_store(name := 't35 d') AS store_d \gset
SELECT status AS s FROM cancel_task((SELECT id FROM worker_tasks WHERE dispensary_id = :store_a AND role = 'product_resync')) \gset
SELECT results_eq($$SELECT * FROM generate_resync_plan(2, date '2030-01-02', 'UTC')$$,
    $$VALUES (2, 0, 2)$$,
    'Should plan the stores that are free, and count the others by reason');
SELECT results_eq($$SELECT * FROM generate_resync_plan(2, date '2030-01-02', 'UTC')$$,
    $$VALUES (0, 2, 2)$$,
    'Should count a store both planned and under way as already planned, once');
SELECT is((SELECT count(*) FROM worker_tasks WHERE dispensary_id = :store_closed), 0::bigint,
    'Should neither plan nor count an inactive store');
SELECT is(generate_resync_tasks(2, date '2030-01-03', 'UTC'), 0,
    'Should leave generate_resync_tasks returning the count generate_resync_plan creates');
SELECT is((SELECT count(*) FROM resync_plan_entries WHERE day = date '2030-01-02'), 2::bigint,
    'Should record the stores it planned in resync_plan_entries');
SELECT throws_ok($$SELECT * FROM generate_resync_plan(2, date '2030-01-01', 'Mars/Olympus_Mons')$$, '22023',
    'unknown time zone ''Mars/Olympus_Mons''',
    'Should refuse bad input as generate_resync_tasks does');

/****************************************************************************/
-- privileges

SELECT function_privs_are('public', 'generate_resync_plan', ARRAY['integer', 'date', 'text', 'integer'],
    'taskpool_worker', ARRAY[]::text[], 'Should not let taskpool_worker execute generate_resync_plan');

SELECT * FROM finish();
ROLLBACK;
