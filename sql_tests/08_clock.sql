-- taskpool_now(): the one clock every taskpool function reads, and its test-only offset.
BEGIN;
SELECT plan(7);

/**************************************************************************/
-- Structure

SELECT has_function('taskpool_now', ARRAY[]::text[], 'Should have taskpool_now()');
SELECT volatility_is('taskpool_now', ARRAY[]::text[], 'stable', 'taskpool_now() should be stable');

/**************************************************************************/
-- Behaviour

SELECT is(taskpool_now(), now(), 'Should be transaction time when no offset is set');

SET LOCAL taskpool.clock_offset = '1 hour';
SELECT is(taskpool_now(), now() + interval '1 hour', 'Should add taskpool.clock_offset');

SELECT is(
    (SELECT scheduled_for FROM enqueue_task('store_discovery')),
    now() + interval '1 hour',
    'Should schedule new tasks at the shifted time'
);

SET LOCAL taskpool.clock_offset = '0';
SELECT tests.make_claimed_task(worker_id := 'clock-w') AS claimed \gset
SET LOCAL taskpool.clock_offset = '20 minutes';
SELECT is(recover_stale_tasks(10), 1,
    'Should see a fresh heartbeat as stale once the clock jumps past the threshold');
SELECT is(
    (SELECT status FROM worker_tasks WHERE worker_id IS NULL AND id = (:'claimed'::worker_tasks).id),
    'pending',
    'Should have recovered the task the jump made stale'
);

SELECT * FROM finish();
ROLLBACK;
