-- claim_task and claim_tasks: what a claim returns, its order, readiness, the role filter,
-- per-store exclusion across roles, the batch, bad arguments, and the attempt counter.
-- Single-session behaviour only: races between claimers are tested across sessions, many
-- connections claiming at once, in tests/test_claim_concurrency.py.
BEGIN;
SELECT plan(56);

-- Test-local roles keep the claim order of these tests free of any other task in the database.
INSERT INTO task_roles (role, requires_store, max_retries, backoff_base, backoff_cap) VALUES
    ('test_claim_basic', false, 3, '10 seconds', '5 minutes'),
    ('test_claim_order', false, 3, '10 seconds', '5 minutes'),
    ('test_claim_sched', false, 3, '10 seconds', '5 minutes'),
    ('test_claim_role_a', false, 3, '10 seconds', '5 minutes'),
    ('test_claim_role_b', false, 3, '10 seconds', '5 minutes'),
    ('test_claim_store_a', true, 3, '10 seconds', '5 minutes'),
    ('test_claim_store_b', false, 3, '10 seconds', '5 minutes'),
    ('test_claim_batch', false, 3, '10 seconds', '5 minutes'),
    ('test_claim_limit', false, 3, '10 seconds', '5 minutes'),
    ('test_claim_attempt', false, 3, '10 seconds', '5 minutes');

-- Fixtures are named in tests.fx (sequences are not rolled back, so ids are never literals).
-- claims: every row a claim returned, in the order the claims were made.
CREATE TEMP TABLE claims (n serial PRIMARY KEY, label text NOT NULL, t worker_tasks NOT NULL);

/****************************************************************************/
-- Structure

SELECT has_function('public', 'claim_task', ARRAY['text', 'text'],
    'Should have claim_task(role, worker_id)');
SELECT function_returns('public', 'claim_task', ARRAY['text', 'text'], 'setof worker_tasks',
    'claim_task should return setof worker_tasks');
SELECT is_definer('public', 'claim_task', ARRAY['text', 'text'],
    'claim_task should be SECURITY DEFINER');
SELECT has_function('public', 'claim_tasks', ARRAY['text', 'text', 'integer'],
    'Should have claim_tasks(role, worker_id, max_tasks)');
SELECT function_returns('public', 'claim_tasks', ARRAY['text', 'text', 'integer'], 'setof worker_tasks',
    'claim_tasks should return setof worker_tasks');
SELECT is_definer('public', 'claim_tasks', ARRAY['text', 'text', 'integer'],
    'claim_tasks should be SECURITY DEFINER');

/****************************************************************************/
-- The claimed row

INSERT INTO tests.fx VALUES ('basic', tests.make_task(role := 'test_claim_basic', payload := '{"k": "v"}'));
INSERT INTO claims (label, t) SELECT 'basic', c FROM claim_task('test_claim_basic', 'w-basic') AS c;

SELECT is((SELECT count(*) FROM claims WHERE label = 'basic'), 1::bigint,
    'claim_task should return exactly one row when a task is ready');
SELECT results_eq(
    $$SELECT (t).id, (t).role, (t).status, (t).worker_id, (t).attempt, (t).claimed_at,
             (t).last_heartbeat_at, (t).started_at, (t).payload
      FROM claims WHERE label = 'basic'$$,
    $$VALUES (tests.fx('basic'), 'test_claim_basic'::text, 'claimed'::text, 'w-basic'::text, 1,
              now(), now(), NULL::timestamptz, '{"k": "v"}'::jsonb)$$,
    'claim_task should return the task claimed by the worker at attempt 1, claimed and heartbeating now');
SELECT results_eq(
    $$SELECT status, worker_id, attempt, claimed_at, last_heartbeat_at
      FROM worker_tasks WHERE id = tests.fx('basic')$$,
    $$VALUES ('claimed'::text, 'w-basic'::text, 1, now(), now())$$,
    'claim_task should store the claim in the task row');
SELECT is((SELECT count(*) FROM claim_task('test_claim_basic', 'w-basic-2')), 0::bigint,
    'claim_task should return no row when no task of the role is ready');
SELECT is((SELECT count(*) FROM claim_tasks('test_claim_basic', 'w-basic-2', 10)), 0::bigint,
    'claim_tasks should return no row when no task of the role is ready');

/****************************************************************************/
-- Order: priority DESC, then created_at ASC, then id

-- Created out of order, so that neither id order nor insertion order can pass for claim order.
INSERT INTO tests.fx VALUES
    ('o_pm5',    tests.make_task(role := 'test_claim_order', priority := -5, created_at := now() - interval '5 hours')),
    ('o_p0_new', tests.make_task(role := 'test_claim_order', priority := 0,  created_at := now() - interval '1 hour')),
    ('o_p5_new', tests.make_task(role := 'test_claim_order', priority := 5,  created_at := now() - interval '1 hour')),
    ('o_p0_old', tests.make_task(role := 'test_claim_order', priority := 0,  created_at := now() - interval '3 hours')),
    ('o_p10',    tests.make_task(role := 'test_claim_order', priority := 10, created_at := now())),
    ('o_tie_1',  tests.make_task(role := 'test_claim_order', priority := 0,  created_at := now() - interval '2 hours')),
    ('o_tie_2',  tests.make_task(role := 'test_claim_order', priority := 0,  created_at := now() - interval '2 hours')),
    ('o_p5_old', tests.make_task(role := 'test_claim_order', priority := 5,  created_at := now() - interval '2 hours'));

DO $$
BEGIN
    FOR i IN 1..9 LOOP
        INSERT INTO claims (label, t)
        SELECT 'order', c FROM claim_task('test_claim_order', 'w-order-' || i) AS c;
    END LOOP;
END;
$$;

SELECT results_eq(
    $$SELECT (t).id, (t).worker_id FROM claims WHERE label = 'order' ORDER BY n$$,
    $$SELECT tests.fx(e.name), 'w-order-' || e.pos
      FROM (VALUES ('o_p10', 1), ('o_p5_old', 2), ('o_p5_new', 3), ('o_p0_old', 4), ('o_tie_1', 5),
                   ('o_tie_2', 6), ('o_p0_new', 7), ('o_pm5', 8)) AS e(name, pos)
      ORDER BY e.pos$$,
    'Claims should take tasks by priority DESC, then created_at ASC, then id, and stop when none is left');

/****************************************************************************/
-- scheduled_for

INSERT INTO tests.fx VALUES
    ('s_future', tests.make_task(role := 'test_claim_sched', priority := 10, scheduled_for := now() + interval '1 minute')),
    ('s_past',   tests.make_task(role := 'test_claim_sched', priority := 0,  scheduled_for := now() - interval '1 minute')),
    ('s_now',    tests.make_task(role := 'test_claim_sched', priority := -1, scheduled_for := now()));

DO $$
BEGIN
    FOR i IN 1..3 LOOP
        INSERT INTO claims (label, t)
        SELECT 'sched', c FROM claim_task('test_claim_sched', 'w-sched-' || i) AS c;
    END LOOP;
END;
$$;

SELECT results_eq(
    $$SELECT (t).id FROM claims WHERE label = 'sched' ORDER BY n$$,
    $$VALUES (tests.fx('s_past')), (tests.fx('s_now'))$$,
    'Claims should take tasks scheduled in the past or for now, and skip one scheduled in the future');
SELECT is((SELECT status FROM worker_tasks WHERE id = tests.fx('s_future')), 'pending',
    'A task scheduled in the future should stay pending');

/****************************************************************************/
-- Role filter

INSERT INTO tests.fx VALUES
    ('r_a', tests.make_task(role := 'test_claim_role_a', priority := 100, created_at := now() - interval '1 day'));

SELECT is((SELECT count(*) FROM claim_task('test_claim_role_b', 'w-role-b')), 0::bigint,
    'claim_task should never return a task of another role');
SELECT is((SELECT status FROM worker_tasks WHERE id = tests.fx('r_a')), 'pending',
    'A claim of another role should leave the task pending');

INSERT INTO tests.fx VALUES ('r_b', tests.make_task(role := 'test_claim_role_b', priority := -100));
SELECT results_eq(
    $$SELECT id, role FROM claim_task('test_claim_role_b', 'w-role-b')$$,
    $$VALUES (tests.fx('r_b'), 'test_claim_role_b'::text)$$,
    'claim_task should take the task of its own role, even one of lower priority than another role''s');

/****************************************************************************/
-- Per-store exclusion across roles

INSERT INTO tests.fx VALUES
    ('store_1', tests.make_store(name := 'Claim store 1')),
    ('store_2', tests.make_store(name := 'Claim store 2')),
    ('store_3', tests.make_store(name := 'Claim store 3'));

INSERT INTO tests.fx SELECT 'x_a_s1', (tests.make_claimed_task(worker_id := 'w-x-a', role := 'test_claim_store_a',
                                                          dispensary_id := tests.fx('store_1')::integer)).id;
INSERT INTO tests.fx VALUES
    ('x_b_s1', tests.make_task(role := 'test_claim_store_b', dispensary_id := tests.fx('store_1')::integer,
                               priority := 10)),
    ('x_b_s2', tests.make_task(role := 'test_claim_store_b', dispensary_id := tests.fx('store_2')::integer,
                               priority := 0));

SELECT results_eq(
    $$SELECT id FROM claim_task('test_claim_store_b', 'w-x-b1')$$,
    $$VALUES (tests.fx('x_b_s2'))$$,
    'A claim should skip a task whose store has a claimed task of another role, and take another store''s task');
SELECT is((SELECT count(*) FROM claim_task('test_claim_store_b', 'w-x-b2')), 0::bigint,
    'A claim should return no row when the only ready task''s store is busy');
SELECT is((SELECT status FROM worker_tasks WHERE id = tests.fx('x_b_s1')), 'pending',
    'The task of the busy store should stay pending');

SELECT is((SELECT status FROM complete_task(tests.fx('x_a_s1'), 'w-x-a', 1, tests.claim_token(tests.fx('x_a_s1'), 1), '{}')), 'completed',
    'The task holding the store should complete');
SELECT results_eq(
    $$SELECT id, worker_id FROM claim_task('test_claim_store_b', 'w-x-b3')$$,
    $$VALUES (tests.fx('x_b_s1'), 'w-x-b3'::text)$$,
    'Once the store''s task completes, its skipped task should be claimable');

-- A running task holds its store too; tasks without a store are never blocked.
INSERT INTO tests.fx SELECT 'y_a_s3', (tests.make_claimed_task(worker_id := 'w-y-a', role := 'test_claim_store_a',
                                                          dispensary_id := tests.fx('store_3')::integer,
                                                          started := true)).id;
INSERT INTO tests.fx VALUES
    ('y_b_s3',     tests.make_task(role := 'test_claim_store_b', dispensary_id := tests.fx('store_3')::integer,
                                   priority := 10)),
    ('y_b_none_1', tests.make_task(role := 'test_claim_store_b', priority := 0,
                                   created_at := now() - interval '2 minutes')),
    ('y_b_none_2', tests.make_task(role := 'test_claim_store_b', priority := 0,
                                   created_at := now() - interval '1 minute'));

SELECT is((SELECT status FROM worker_tasks WHERE id = tests.fx('y_a_s3')), 'running',
    'The store 3 task of role A should be running');

DO $$
BEGIN
    FOR i IN 1..3 LOOP
        INSERT INTO claims (label, t)
        SELECT 'nostore', c FROM claim_task('test_claim_store_b', 'w-y-b' || i) AS c;
    END LOOP;
END;
$$;

SELECT results_eq(
    $$SELECT (t).id FROM claims WHERE label = 'nostore' ORDER BY n$$,
    $$VALUES (tests.fx('y_b_none_1')), (tests.fx('y_b_none_2'))$$,
    'A claim should skip a task whose store has a running task, and never block tasks without a store');
SELECT is((SELECT status FROM worker_tasks WHERE id = tests.fx('y_b_s3')), 'pending',
    'The task of the store with a running task should stay pending');

/****************************************************************************/
-- claim_tasks: a batch

INSERT INTO tests.fx VALUES
    ('store_4', tests.make_store(name := 'Claim store 4')),
    ('store_5', tests.make_store(name := 'Claim store 5'));
INSERT INTO tests.fx VALUES
    ('b_s4_p5',   tests.make_task(role := 'test_claim_batch', dispensary_id := tests.fx('store_4')::integer, priority := 5)),
    ('b_s4_p3',   tests.make_task(role := 'test_claim_batch', dispensary_id := tests.fx('store_4')::integer, priority := 3)),
    ('b_s4_p1',   tests.make_task(role := 'test_claim_batch', dispensary_id := tests.fx('store_4')::integer, priority := 1)),
    ('b_s5_p4',   tests.make_task(role := 'test_claim_batch', dispensary_id := tests.fx('store_5')::integer, priority := 4)),
    ('b_none_p2', tests.make_task(role := 'test_claim_batch', priority := 2));

SELECT results_eq(
    $$SELECT id, status, worker_id, attempt, claimed_at FROM claim_tasks('test_claim_batch', 'w-batch', 10)$$,
    $$SELECT tests.fx(e.name), 'claimed'::text, 'w-batch'::text, 1, now()
      FROM (VALUES ('b_s4_p5', 1), ('b_s5_p4', 2), ('b_none_p2', 3)) AS e(name, pos)
      ORDER BY e.pos$$,
    'claim_tasks should claim at most one task per store, the best of each, returned in claim order');
SELECT is(
    (SELECT count(DISTINCT dispensary_id) FROM worker_tasks
     WHERE worker_id = 'w-batch' AND status = 'claimed' AND dispensary_id IS NOT NULL),
    2::bigint,
    'The batch should hold two distinct stores');
SELECT set_eq(
    $$SELECT id FROM worker_tasks WHERE role = 'test_claim_batch' AND status = 'pending'$$,
    ARRAY[tests.fx('b_s4_p3'), tests.fx('b_s4_p1')],
    'The other tasks of the batch''s busy store should stay pending');
SELECT is((SELECT count(*) FROM claim_tasks('test_claim_batch', 'w-batch-2', 10)), 0::bigint,
    'A second batch should claim nothing while the store of the remaining tasks is busy');

INSERT INTO tests.fx VALUES
    ('l_1', tests.make_task(role := 'test_claim_limit', created_at := now() - interval '3 minutes')),
    ('l_2', tests.make_task(role := 'test_claim_limit', created_at := now() - interval '2 minutes')),
    ('l_3', tests.make_task(role := 'test_claim_limit', created_at := now() - interval '1 minute'));

SELECT results_eq(
    $$SELECT id FROM claim_tasks('test_claim_limit', 'w-limit', 2)$$,
    $$VALUES (tests.fx('l_1')), (tests.fx('l_2'))$$,
    'claim_tasks should claim no more than max_tasks, the first ones in claim order');
SELECT results_eq(
    $$SELECT id FROM claim_tasks('test_claim_limit', 'w-limit', 1000)$$,
    $$VALUES (tests.fx('l_3'))$$,
    'claim_tasks should accept max_tasks 1000 and claim what is left');

/****************************************************************************/
-- Bad arguments

SELECT throws_ok(
    $$SELECT * FROM claim_tasks('test_claim_limit', 'w-bad', 0)$$,
    '22023', 'max_tasks 0 is out of range',
    'claim_tasks should reject max_tasks 0');
SELECT throws_ok(
    $$SELECT * FROM claim_tasks('test_claim_limit', 'w-bad', 1001)$$,
    '22023', 'max_tasks 1001 is out of range',
    'claim_tasks should reject max_tasks 1001');
SELECT throws_ok(
    $$SELECT * FROM claim_tasks('test_claim_limit', 'w-bad', -1)$$,
    '22023', 'max_tasks -1 is out of range',
    'claim_tasks should reject a negative max_tasks');
SELECT is(tests.error_hint($$SELECT * FROM claim_tasks('test_claim_limit', 'w-bad', 0)$$),
    'Claim from 1 to 1000 tasks at a time.',
    'The max_tasks error should hint at the allowed range');

SELECT throws_ok(
    $$SELECT * FROM claim_task(NULL, 'w-bad')$$,
    '22004', 'role, worker_id and max_tasks are all required',
    'claim_task should reject a NULL role');
SELECT throws_ok(
    $$SELECT * FROM claim_task('test_claim_limit', NULL)$$,
    '22004', 'role, worker_id and max_tasks are all required',
    'claim_task should reject a NULL worker_id');
SELECT throws_ok(
    $$SELECT * FROM claim_tasks(NULL, 'w-bad', 10)$$,
    '22004', 'role, worker_id and max_tasks are all required',
    'claim_tasks should reject a NULL role');
SELECT throws_ok(
    $$SELECT * FROM claim_tasks('test_claim_limit', NULL, 10)$$,
    '22004', 'role, worker_id and max_tasks are all required',
    'claim_tasks should reject a NULL worker_id');
SELECT throws_ok(
    $$SELECT * FROM claim_tasks('test_claim_limit', 'w-bad', NULL)$$,
    '22004', 'role, worker_id and max_tasks are all required',
    'claim_tasks should reject a NULL max_tasks');

SELECT throws_ok(
    $$SELECT * FROM claim_task('test_claim_limit', '')$$,
    '22023', 'worker_id must be 1 to 200 characters, not 0',
    'claim_task should reject an empty worker_id');
SELECT throws_ok(
    format('SELECT * FROM claim_task(%L, %L)', 'test_claim_limit', repeat('w', 201)),
    '22023', 'worker_id must be 1 to 200 characters, not 201',
    'claim_task should reject a worker_id of 201 characters');
SELECT throws_ok(
    format('SELECT * FROM claim_tasks(%L, %L, 5)', 'test_claim_limit', ''),
    '22023', 'worker_id must be 1 to 200 characters, not 0',
    'claim_tasks should reject an empty worker_id');
SELECT lives_ok(
    format('SELECT * FROM claim_task(%L, %L)', 'test_claim_limit', repeat('w', 200)),
    'claim_task should accept a worker_id of 200 characters');

SELECT throws_ok(
    $$SELECT * FROM claim_task('nope', 'w-bad')$$,
    '22023', 'unknown role ''nope''',
    'claim_task should reject an unknown role');
SELECT throws_ok(
    $$SELECT * FROM claim_tasks('nope', 'w-bad', 10)$$,
    '22023', 'unknown role ''nope''',
    'claim_tasks should reject an unknown role');
SELECT is(
    tests.error_hint($$SELECT * FROM claim_task('nope', 'w-bad')$$),
    'Known roles: ' || (SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r) || '.',
    'The unknown role error should hint at every known role');
SELECT matches(
    tests.error_hint($$SELECT * FROM claim_task('nope', 'w-bad')$$),
    '^Known roles: .*\mproduct_resync\M.*\mstore_discovery\M.*\.$',
    'The known roles in the hint should include the crawler roles, sorted');
SELECT is((SELECT count(*) FROM worker_tasks WHERE worker_id = 'w-bad'), 0::bigint,
    'Rejected claims should claim nothing');

/****************************************************************************/
-- The attempt counter

INSERT INTO tests.fx VALUES ('a', tests.make_task(role := 'test_claim_attempt'));
INSERT INTO claims (label, t) SELECT 'attempt', c FROM claim_task('test_claim_attempt', 'w-att-1') AS c;
SELECT is((SELECT (t).attempt FROM claims WHERE label = 'attempt' AND (t).worker_id = 'w-att-1'), 1,
    'The first claim should be attempt 1');

SELECT is((SELECT status FROM release_task(tests.fx('a'), 'w-att-1', 1, tests.claim_token(tests.fx('a'), 1))), 'pending',
    'A released task should be pending again');
INSERT INTO claims (label, t) SELECT 'attempt', c FROM claim_task('test_claim_attempt', 'w-att-2') AS c;
SELECT results_eq(
    $$SELECT (t).id, (t).attempt, (t).status FROM claims WHERE label = 'attempt' AND (t).worker_id = 'w-att-2'$$,
    $$VALUES (tests.fx('a'), 2, 'claimed'::text)$$,
    'Claiming the released task again should be attempt 2');

SELECT results_eq(
    $$SELECT status, error_message, retry_count
      FROM fail_task(tests.fx('a'), 'w-att-2', 2, tests.claim_token(tests.fx('a'), 2), 'boom', retry_at := now())$$,
    $$VALUES ('pending'::text, 'boom'::text, 1)$$,
    'A failed attempt should leave the task pending with its error');
INSERT INTO claims (label, t) SELECT 'attempt', c FROM claim_task('test_claim_attempt', 'w-att-3') AS c;
SELECT results_eq(
    $$SELECT (t).id, (t).attempt, (t).error_message FROM claims WHERE label = 'attempt' AND (t).worker_id = 'w-att-3'$$,
    $$VALUES (tests.fx('a'), 3, NULL::text)$$,
    'The next claim should be attempt 3 and clear the previous attempt''s error_message');
SELECT results_eq(
    $$SELECT attempt, error_message FROM worker_tasks WHERE id = tests.fx('a')$$,
    $$VALUES (3, NULL::text)$$,
    'The task row should hold attempt 3 without an error_message');
SELECT results_eq(
    $$SELECT attempt, worker_id, outcome, error_message FROM worker_task_attempts
      WHERE task_id = tests.fx('a') ORDER BY attempt$$,
    $$VALUES (1, 'w-att-1'::text, 'released'::text, NULL::text),
             (2, 'w-att-2'::text, 'retried'::text, 'boom'::text)$$,
    'The earlier attempts and their error should stay in worker_task_attempts');

SELECT * FROM finish();
ROLLBACK;
