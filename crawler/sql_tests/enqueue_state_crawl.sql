-- enqueue_state_crawl: a crawl of every active store of a state (issue 18, item 5; seed 001's
-- enqueue-state). One task per active store of the state, none for a store with a task of the
-- role under way; a dry run counts without queueing; bad input changes nothing.
BEGIN;
SELECT plan(21);

SELECT has_function('public', 'enqueue_state_crawl', ARRAY['text', 'text', 'boolean'],
    'Should have enqueue_state_crawl(role, state, dry_run)');
SELECT ok(NOT has_function_privilege('taskpool_worker', 'enqueue_state_crawl(text, text, boolean)', 'execute'),
    'Should leave enqueue_state_crawl to operators, not taskpool_worker');

-- The stores: three active in ZZ (one already being resynced), one closed in ZZ, one in ZY.
INSERT INTO dispensaries (name, platform, state_code, active)
VALUES ('t62 a', 'simulated', 'ZZ', true), ('t62 b', 'simulated', 'ZZ', true), ('t62 c', 'simulated', 'ZZ', true),
       ('t62 closed', 'simulated', 'ZZ', false), ('t62 elsewhere', 'simulated', 'ZY', true);
SELECT id AS store_a FROM dispensaries WHERE name = 't62 a' \gset
SELECT id AS store_b FROM dispensaries WHERE name = 't62 b' \gset
SELECT id AS store_c FROM dispensaries WHERE name = 't62 c' \gset
SELECT tests.make_task('product_resync', :store_c) AS busy_task \gset

SELECT * FROM tests.rejects($$SELECT * FROM enqueue_state_crawl('no_such_role', 'ZZ')$$,
    '22023', 'unknown role ''no_such_role''', 'an unknown role');
SELECT * FROM tests.rejects($$SELECT * FROM enqueue_state_crawl('product_refresh', 'ZZ')$$,
    '22023', 'role product_refresh is not a crawl of a store''s menu', 'a role that needs a payload, not a store');
SELECT * FROM tests.rejects($$SELECT * FROM enqueue_state_crawl('store_discovery', 'ZZ')$$,
    '22023', 'role store_discovery is not a crawl of a store''s menu', 'a role that is not per store');
SELECT * FROM tests.rejects($$SELECT * FROM enqueue_state_crawl('product_resync', 'az')$$,
    '22023', 'state ''az'' is not a state code', 'a lower-case state');
SELECT * FROM tests.rejects($$SELECT * FROM enqueue_state_crawl('product_resync', 'ARIZ')$$,
    '22023', 'state ''ARIZ'' is not a state code', 'a state name');
SELECT * FROM tests.rejects($$SELECT * FROM enqueue_state_crawl('product_resync', NULL)$$,
    '22023', 'enqueue_state_crawl needs a role, a state and dry_run', 'a NULL state');

SELECT results_eq($$SELECT * FROM enqueue_state_crawl('product_resync', 'ZZ', dry_run := true)$$,
    $$VALUES (2, 1)$$, 'Should count what a crawl of the state would make and skip on a dry run');
SELECT is((SELECT count(*)::integer FROM worker_tasks WHERE dispensary_id IN (:store_a, :store_b)), 0,
    'Should queue nothing on a dry run');
SELECT results_eq($$SELECT * FROM enqueue_state_crawl('product_resync', 'ZZ')$$,
    $$VALUES (2, 1)$$, 'Should queue one task per active store of the state, skipping the one under way');
SELECT results_eq(
    format($$SELECT dispensary_id, role, status, platform, max_retries FROM worker_tasks
             WHERE dispensary_id IN (%s, %s, %s) ORDER BY dispensary_id, id$$, :store_a, :store_b, :store_c),
    format($$VALUES (%s, 'product_resync'::text, 'pending'::text, 'simulated'::text,
                     (SELECT max_retries FROM task_roles WHERE role = 'product_resync')),
                    (%s, 'product_resync', 'pending', 'simulated', (SELECT max_retries FROM task_roles WHERE role = 'product_resync')),
                    (%s, 'product_resync', 'pending', 'simulated', (SELECT max_retries FROM task_roles WHERE role = 'product_resync'))$$,
           :store_a, :store_b, :store_c),
    'Should queue pending tasks of the role for the stores, with the role''s retries, and no second one for the busy store');
SELECT results_eq($$SELECT * FROM enqueue_state_crawl('product_resync', 'ZZ')$$,
    $$VALUES (0, 3)$$, 'Should make nothing when run again: every store has its task under way');
SELECT results_eq($$SELECT * FROM enqueue_state_crawl('product_discovery', 'ZZ')$$,
    $$VALUES (3, 0)$$, 'Should dedupe per role: a product_resync under way does not hold back a product_discovery');
SELECT results_eq($$SELECT * FROM enqueue_state_crawl('product_resync', 'ZX')$$,
    $$VALUES (0, 0)$$, 'Should make nothing for a state without stores');

SELECT * FROM finish();
ROLLBACK;
