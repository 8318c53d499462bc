-- chains: follow-up tasks queued from task_role_chains in the transaction that completes a task.
BEGIN;
SELECT plan(10);

SELECT has_table('task_role_chains', 'Should have table task_role_chains');
SELECT has_trigger('worker_tasks', '_600_after_status_change', 'Should chain follow-ups from a trigger');
SELECT results_eq(
    $$SELECT from_role, to_role, result_key, per_store_ids FROM task_role_chains ORDER BY from_role$$,
    $$VALUES ('product_discovery'::text, 'product_refresh'::text, 'payload_id'::text, false),
             ('product_resync', 'product_refresh', 'payload_id', false),
             ('store_discovery', 'product_discovery', 'newStoreIds', true)$$,
    'Should seed the crawler''s chains');

SELECT tests.make_store(name := 'chain one') AS store_a \gset
SELECT tests.make_store(name := 'chain two') AS store_b \gset

-- store_discovery fans out over the new stores.
SELECT id AS discovery_id FROM tests.make_claimed_task(worker_id := 'w1', role := 'store_discovery') \gset
SELECT status AS completed_status FROM complete_task(:discovery_id, 'w1', 1, tests.claim_token(:discovery_id, 1), jsonb_build_object('newStoreIds', jsonb_build_array(:store_a, :store_b))) \gset
SELECT bag_eq(
    format('SELECT dispensary_id, status FROM worker_tasks WHERE role = %L AND dispensary_id IN (%s, %s)',
           'product_discovery', :store_a, :store_b),
    format('VALUES (%s, %L), (%s, %L)', :store_a, 'pending', :store_b, 'pending'),
    'Should queue a product_discovery per new store');

-- product_resync hands its payload on to product_refresh, for the same store.
SELECT id AS resync_id FROM tests.make_claimed_task(worker_id := 'w1', role := 'product_resync', dispensary_id := :store_a) \gset
SELECT status AS completed_status FROM complete_task(:resync_id, 'w1', 1, tests.claim_token(:resync_id, 1), '{"payload_id": 42, "products": 7}') \gset
SELECT results_eq(
    format('SELECT dispensary_id, payload FROM worker_tasks WHERE role = %L AND dispensary_id = %s',
           'product_refresh', :store_a),
    format('VALUES (%s, %L::jsonb)', :store_a, '{"payload_id": 42}'),
    'Should queue product_refresh with the payload_id for the same store');

-- A completion without the key, or with a result that is not an object, chains nothing.
SELECT id AS plain_id FROM tests.make_claimed_task(worker_id := 'w1', role := 'store_discovery') \gset
SELECT status AS completed_status FROM complete_task(:plain_id, 'w1', 1, tests.claim_token(:plain_id, 1), '{"stores": 3}') \gset
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 'product_discovery' AND created_at = now()), 2::bigint,
    'Should chain nothing from a result without the key');
SELECT id AS array_id FROM tests.make_claimed_task(worker_id := 'w1', role := 'store_discovery') \gset
SELECT status AS completed_status FROM complete_task(:array_id, 'w1', 1, tests.claim_token(:array_id, 1), '[1, 2]') \gset
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 'product_discovery' AND created_at = now()), 2::bigint,
    'Should chain nothing from a result that is not an object');

-- A bad link fails the completion itself: nothing completed, nothing queued.
SELECT id AS bad_id FROM tests.make_claimed_task(worker_id := 'w1', role := 'store_discovery') \gset
SELECT throws_ok(
    format($$SELECT complete_task(%s, 'w1', 1, tests.claim_token(%1$s, 1), '{"newStoreIds": [-5]}')$$, :bad_id),
    '23503', format('task %s chained[0]: dispensary -5 does not exist', :bad_id),
    'Should refuse a completion whose chain names a store that does not exist');
SELECT is((SELECT status FROM worker_tasks WHERE id = :bad_id), 'claimed', 'Should leave that task claimed');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 'product_discovery' AND created_at = now()), 2::bigint,
    'Should queue nothing from the refused completion');

SELECT * FROM finish();
ROLLBACK;
