-- taskpool_now(): the one clock every taskpool function reads, and set_taskpool_clock_offset(),
-- the operator's (and the tests') only way to move it.
BEGIN;
SELECT plan(16);

/**************************************************************************/
-- Structure

SELECT has_function('taskpool_now', ARRAY[]::text[], 'Should have taskpool_now()');
SELECT volatility_is('taskpool_now', ARRAY[]::text[], 'stable', 'taskpool_now() should be stable');
SELECT has_function('set_taskpool_clock_offset', ARRAY['interval'], 'Should have set_taskpool_clock_offset(interval)');
SELECT function_privs_are('public', 'set_taskpool_clock_offset', ARRAY['interval'], 'taskpool_worker', ARRAY[]::text[],
    'Should not let taskpool_worker move the clock');

/**************************************************************************/
-- Behaviour

SELECT is(taskpool_now(), now(), 'Should be transaction time when no offset is set');

SELECT is(set_taskpool_clock_offset('1 hour'), now() + interval '1 hour', 'Should return the shifted time');
SELECT is(taskpool_now(), now() + interval '1 hour', 'Should add the offset');

SELECT is(
    (SELECT scheduled_for FROM enqueue_task('store_discovery')),
    now() + interval '1 hour',
    'Should schedule new tasks at the shifted time'
);

SELECT set_taskpool_clock_offset('0') AS real_clock \gset
SELECT is(taskpool_now(), now(), 'Should go back to transaction time at offset 0');
SELECT tests.make_claimed_task(worker_id := 'clock-w') AS claimed \gset
SELECT set_taskpool_clock_offset('20 minutes') AS shifted \gset
SELECT is(recover_stale_tasks(10), 1,
    'Should see a fresh heartbeat as stale once the clock jumps past the threshold');
SELECT is(
    (SELECT status FROM worker_tasks WHERE worker_id IS NULL AND id = (:'claimed'::worker_tasks).id),
    'pending',
    'Should have recovered the task the jump made stale'
);

-- The offset reads the same under every IntervalStyle, even with fields of both signs.
SELECT set_taskpool_clock_offset(interval '-1 day' + interval '2 hours') AS shifted \gset
SET LOCAL IntervalStyle = 'sql_standard';
SELECT is(taskpool_now(), now() - interval '22 hours', 'Should read a day back and two hours on under sql_standard');
SET LOCAL IntervalStyle = 'postgres';
SELECT is(taskpool_now(), now() - interval '22 hours', 'Should read a day back and two hours on under postgres');

/**************************************************************************/
-- Bad input changes nothing

SELECT throws_ok($$SELECT set_taskpool_clock_offset(NULL)$$, '22004', 'clock_offset is required',
    'Should refuse a NULL offset');
SELECT throws_ok($$SELECT set_taskpool_clock_offset('101 years')$$, '22023',
    'clock_offset must be between -100 years and 100 years, not 101 years', 'Should refuse an offset past a century');
SELECT is(taskpool_now(), now() - interval '22 hours', 'Should keep the offset after a refused change');

SELECT * FROM finish();
ROLLBACK;
