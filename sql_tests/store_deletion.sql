-- store_deletion: deleting a store while it has tasks ends them cleanly and keeps their history.
BEGIN;
SELECT plan(12);

SELECT has_trigger('dispensaries', '_100_settle_tasks', 'Should settle a store''s tasks when it is deleted');
SELECT fk_ok('worker_tasks', 'dispensary_id', 'dispensaries', 'id', 'Should still tie tasks to stores');

SELECT tests.make_store(name := 'doomed') AS store \gset
SELECT tests.make_store(name := 'kept') AS kept \gset
SELECT id AS done_id FROM tests.make_claimed_task(worker_id := 'w1', role := 'product_discovery', dispensary_id := :store) \gset
SELECT status AS done_status FROM complete_task(:done_id, 'w1', 1, tests.claim_token(:done_id, 1), '{"products": 3}') \gset
SELECT id AS running_id, attempt AS running_attempt
FROM tests.make_claimed_task(worker_id := 'w2', role := 'product_resync', dispensary_id := :store, started := true) \gset
SELECT tests.make_task(role := 'product_refresh', dispensary_id := :store) AS waiting_id \gset
SELECT tests.make_task(role := 'product_refresh', dispensary_id := :kept) AS other_id \gset

DELETE FROM dispensaries WHERE id = :store;

SELECT results_eq(
    format('SELECT status, error_message, dispensary_id, completed_at FROM worker_tasks WHERE id = %s', :waiting_id),
    format($$VALUES ('cancelled'::text, 'store %s was deleted while the task waited'::text, NULL::integer, now())$$, :store),
    'Should cancel a waiting task of the deleted store, saying why');
SELECT results_eq(
    format('SELECT status, cancel_requested_at, dispensary_id FROM worker_tasks WHERE id = %s', :running_id),
    $$VALUES ('running'::text, now(), NULL::integer)$$,
    'Should ask a running task of the deleted store to stop');
SELECT is(heartbeat_task(:running_id, 'w2', :running_attempt, tests.claim_token(:running_id, :running_attempt)), 'cancel_requested',
    'Should tell the running task''s worker at its next heartbeat');
SELECT is((SELECT status FROM fail_task(:running_id, 'w2', :running_attempt, tests.claim_token(:running_id, :running_attempt), 'store not found')), 'cancelled',
    'Should end the running task cancelled when its worker gives up');
SELECT results_eq(
    format('SELECT status, result, dispensary_id FROM worker_tasks WHERE id = %s', :done_id),
    $$VALUES ('completed'::text, '{"products": 3}'::jsonb, NULL::integer)$$,
    'Should keep a finished task''s history, without the store');
SELECT is((SELECT status FROM worker_tasks WHERE id = :other_id), 'pending',
    'Should leave another store''s tasks alone');
SELECT is((SELECT dispensary_id FROM worker_tasks WHERE id = :other_id), :kept,
    'Should leave another store''s tasks on their store');
SELECT is((SELECT count(*) FROM dispensaries WHERE id = :store), 0::bigint, 'Should delete the store');

-- A store without tasks goes as before.
SELECT tests.make_store(name := 'idle') AS idle \gset
SELECT lives_ok(format('DELETE FROM dispensaries WHERE id = %s', :idle), 'Should delete a store with no tasks');
SELECT is((SELECT count(*) FROM worker_task_attempts WHERE task_id = :waiting_id), 0::bigint,
    'Should record no attempt for a task that never ran');

SELECT * FROM finish();
ROLLBACK;
