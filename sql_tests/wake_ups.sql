-- wake_ups: waiting workers and who an enqueue wakes. mark_worker_waiting puts a registered
-- worker in task_worker_waits; an enqueue or requeue of ready tasks takes out (and notifies, on
-- worker_wake_channel) one waiting worker of the role per task, the freshest heartbeat first; a
-- successful claim takes the claimer out. Wake-ups happen at commit (task_wake_requests): SET
-- CONSTRAINTS ALL IMMEDIATE has them happen at the end of each statement instead, so pgTAP sees
-- the table; the pytest suites (tests/test_notify.py, tests/test_enqueue_concurrency.py) see the
-- notifications and the locking.
BEGIN;
SELECT plan(25);
SET CONSTRAINTS ALL IMMEDIATE;

INSERT INTO task_roles (role, requires_store, description) VALUES
    ('t20w_a', false, 'pgTAP wake_ups: the role enqueued'),
    ('t20w_b', false, 'pgTAP wake_ups: another role');

/****************************************************************************/
-- Structure

SELECT has_table('public', 'task_worker_waits', 'Should have task_worker_waits');
SELECT col_is_pk('public', 'task_worker_waits', ARRAY['worker_id', 'role'], 'task_worker_waits should be keyed by worker and role');
SELECT fk_ok('public', 'task_worker_waits', 'worker_id', 'public', 'task_workers', 'worker_id',
    'task_worker_waits should belong to a registered worker');
SELECT has_function('public', 'mark_worker_waiting', ARRAY['text'], 'Should have mark_worker_waiting(worker_id)');
SELECT function_returns('public', 'mark_worker_waiting', ARRAY['text'], 'boolean',
    'mark_worker_waiting should return boolean');
SELECT has_function('public', 'worker_wake_channel', ARRAY['text'], 'Should have worker_wake_channel(worker_id)');
SELECT is(worker_wake_channel('w1'), 'taskpool_wake_' || md5('w1'),
    'A wake channel should be the worker id hashed into an identifier');
SELECT cmp_ok(octet_length(worker_wake_channel(repeat('é', 200))), '<=', 63,
    'A wake channel should fit in a channel name whatever the worker id');
SELECT function_privs_are('public', '_wake_waiting_workers', ARRAY['text', 'bigint'], 'taskpool_worker',
    ARRAY[]::text[], 'Should not let taskpool_worker wake workers directly');

/****************************************************************************/
-- Marking

SELECT register_worker(w, r, 'host', 1) FROM (VALUES ('t20w-1', 't20w_a'), ('t20w-2', 't20w_a'),
                                                       ('t20w-3', 't20w_a'), ('t20w-b', 't20w_b')) AS v(w, r);
SELECT is(mark_worker_waiting('t20w-1'), true, 'A first mark should say it is new');
SELECT is(mark_worker_waiting('t20w-1'), false, 'A second mark should say the worker waits already');
SELECT throws_ok($$SELECT mark_worker_waiting('t20w-nobody')$$, 'P0002', 'worker ''t20w-nobody'' is not registered',
    'An unregistered worker should not be able to wait');
SELECT is(tests.waiting_workers(), ARRAY['t20w-1'], 'Only the marked worker should be waiting');

/****************************************************************************/
-- Waking

SELECT mark_worker_waiting(w) FROM unnest(ARRAY['t20w-2', 't20w-3', 't20w-b']) AS w;
-- t20w-3 has the freshest heartbeat, then t20w-2.
UPDATE task_workers SET last_seen_at = taskpool_now() - interval '1 minute' WHERE worker_id = 't20w-1';
UPDATE task_workers SET last_seen_at = taskpool_now() - interval '30 seconds' WHERE worker_id = 't20w-2';
SELECT enqueue_task('t20w_a', scheduled_for := taskpool_now() + interval '1 hour');
SELECT is(tests.waiting_workers(), ARRAY['t20w-1', 't20w-2', 't20w-3', 't20w-b'],
    'A task scheduled later should wake nobody');
SELECT enqueue_task('t20w_a');
SELECT is(tests.waiting_workers(), ARRAY['t20w-1', 't20w-2', 't20w-b'],
    'One ready task should wake one waiting worker of its role, the freshest heartbeat first');
SELECT count(*) FROM enqueue_tasks('[{"role": "t20w_a"}, {"role": "t20w_a"}, {"role": "t20w_a"}]');
SELECT is(tests.waiting_workers(), ARRAY['t20w-b'],
    'Three ready tasks should wake the two workers left, and no worker of another role');
SELECT is((SELECT count(*) FROM task_worker_waits WHERE worker_id = 't20w-b'), 1::bigint,
    'The worker of another role should still wait');

/****************************************************************************/
-- Requeues, claims, deregistration

SELECT mark_worker_waiting('t20w-1');
SELECT is((SELECT count(*) FROM claim_and_start_tasks('t20w_a', 't20w-2')), 1::bigint,
    'A worker that was woken should claim a task');
SELECT is(tests.waiting_workers(), ARRAY['t20w-1', 't20w-b'], 'A claim by a worker not waiting should change no mark');
SELECT release_task(t.id, 't20w-2', t.attempt, tests.claim_token(t.id, t.attempt)) FROM worker_tasks t WHERE t.worker_id = 't20w-2';
SELECT is(tests.waiting_workers(), ARRAY['t20w-b'], 'A released task should wake a waiting worker of its role');
SELECT mark_worker_waiting('t20w-1');
SELECT is((SELECT count(*) FROM claim_and_start_tasks('t20w_a', 't20w-1')), 1::bigint,
    'A waiting worker should be able to claim without being woken');
SELECT is(tests.waiting_workers(), ARRAY['t20w-b'], 'A successful claim should take the claimer out of the waiting');
SELECT mark_worker_waiting('t20w-3');
SELECT is((SELECT count(*) FROM claim_and_start_tasks('t20w_b', 't20w-3')), 0::bigint,
    'A claim that finds nothing ...');
SELECT is(tests.waiting_workers(), ARRAY['t20w-3', 't20w-b'], '... should leave the worker waiting');
SELECT deregister_worker('t20w-b');
SELECT is(tests.waiting_workers(), ARRAY['t20w-3'], 'A deregistered worker should wait no more');

SELECT * FROM finish();
ROLLBACK;
