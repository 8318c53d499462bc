-- lifecycle_batches: the worker's fast path. claim_and_start_tasks claims and starts a batch in
-- one call (pending -> running, no committed claimed state); complete_tasks records a batch of
-- successes in one call and answers each completion completed, lost or not_found. claim_tasks,
-- now a wrapper over the same _claim_tasks, keeps its behaviour. Single-session behaviour only:
-- races between claimers are tested across sessions in tests/test_claim_concurrency.py (through
-- claim_tasks, whose _claim_tasks claim_and_start_tasks shares).
BEGIN;
SELECT plan(92);

-- One role per scenario, so that each claim takes exactly the tasks its section means.
INSERT INTO task_roles (role, requires_store, description) VALUES
    ('t31_start',     false, 'pgTAP lifecycle_batches: the started row'),
    ('t31_restart',   false, 'pgTAP lifecycle_batches: a second attempt'),
    ('t31_default',   false, 'pgTAP lifecycle_batches: the default max_tasks'),
    ('t31_order',     false, 'pgTAP lifecycle_batches: claim order'),
    ('t31_sched',     false, 'pgTAP lifecycle_batches: scheduled_for'),
    ('t31_batch',     false, 'pgTAP lifecycle_batches: one task per store in a batch'),
    ('t31_store_a',   true,  'pgTAP lifecycle_batches: the role holding the stores'),
    ('t31_store_b',   false, 'pgTAP lifecycle_batches: the role skipping busy stores'),
    ('t31_circuit',   false, 'pgTAP lifecycle_batches: open circuits'),
    ('t31_claim',     false, 'pgTAP lifecycle_batches: claim_tasks unchanged'),
    ('t31_errors',    false, 'pgTAP lifecycle_batches: refused claims'),
    ('t31_done',      false, 'pgTAP lifecycle_batches: a batch of completions'),
    ('t31_lost',      false, 'pgTAP lifecycle_batches: a task re-claimed by another worker'),
    ('t31_follow_a',  false, 'pgTAP lifecycle_batches: follow-ups without a store'),
    ('t31_follow_b',  true,  'pgTAP lifecycle_batches: follow-ups with a store'),
    ('t31_bad',       false, 'pgTAP lifecycle_batches: a bad follow-up'),
    ('t31_malformed', false, 'pgTAP lifecycle_batches: malformed completions'),
    ('t31_priv',      false, 'pgTAP lifecycle_batches: as taskpool_worker'),
    ('t31_arrays',    false, 'pgTAP lifecycle_batches: complete_tasks with arrays');

-- Fixtures are named in tests.fx (sequences are not rolled back, so ids are never literals).
-- claims: every row a claim returned; answers: every row complete_tasks returned.
CREATE TEMP TABLE claims (n serial PRIMARY KEY, label text NOT NULL, t worker_tasks NOT NULL);
CREATE TEMP TABLE answers (n serial PRIMARY KEY, label text NOT NULL, task_id bigint, attempt integer, status text);

/****************************************************************************/
-- Structure

SELECT has_function('public', 'claim_and_start_tasks', ARRAY['text', 'text', 'integer'],
    'Should have claim_and_start_tasks(role, worker_id, max_tasks)');
SELECT function_returns('public', 'claim_and_start_tasks', ARRAY['text', 'text', 'integer'], 'setof worker_tasks',
    'claim_and_start_tasks should return setof worker_tasks');
SELECT is(pg_get_function_arguments('claim_and_start_tasks(text, text, integer)'::regprocedure),
    'role text, worker_id text, max_tasks integer DEFAULT 1',
    'claim_and_start_tasks should take role, worker_id and max_tasks, which defaults to 1');
SELECT is_definer('public', 'claim_and_start_tasks', ARRAY['text', 'text', 'integer'],
    'claim_and_start_tasks should be SECURITY DEFINER');
SELECT has_function('public', 'complete_tasks', ARRAY['text', 'jsonb'],
    'Should have complete_tasks(worker_id, completions)');
SELECT function_returns('public', 'complete_tasks', ARRAY['text', 'jsonb'], 'setof record',
    'complete_tasks should return a set of rows');
SELECT is(pg_get_function_result('complete_tasks(text, jsonb)'::regprocedure),
    'TABLE(task_id bigint, attempt integer, status text)',
    'complete_tasks should return (task_id, attempt, status) rows');
SELECT is_definer('public', 'complete_tasks', ARRAY['text', 'jsonb'],
    'complete_tasks should be SECURITY DEFINER');
SELECT has_function('public', '_claim_tasks', ARRAY['text', 'text', 'integer', 'boolean'],
    'Should have the internal _claim_tasks(role, worker_id, max_tasks, start)');
SELECT function_returns('public', '_claim_tasks', ARRAY['text', 'text', 'integer', 'boolean'], 'setof worker_tasks',
    '_claim_tasks should return setof worker_tasks');
SELECT ok(string_to_array(taskpool_schema_version(), '.')::int[] >= ARRAY[0, 3, 0],
    'taskpool_schema_version should report 0.3.0 or later, a schema with the fast path');

/****************************************************************************/
-- claim_and_start_tasks: the started row, on taskpool's clock

INSERT INTO tests.fx VALUES ('start', tests.make_task(role := 't31_start', payload := '{"k": "v"}'));

-- A clock offset tells taskpool_now() (what the claim must use) from now().
SELECT set_taskpool_clock_offset('3 minutes') AS shifted \gset
INSERT INTO claims (label, t) SELECT 'start', c FROM claim_and_start_tasks('t31_start', 'w-start', 5) AS c;
SELECT results_eq(
    $$SELECT (t).id, (t).status, (t).worker_id, (t).attempt, (t).claimed_at, (t).started_at,
             (t).last_heartbeat_at, (t).completed_at, (t).payload
      FROM claims WHERE label = 'start'$$,
    $$VALUES (tests.fx('start'), 'running'::text, 'w-start'::text, 1, now() + interval '3 minutes',
              now() + interval '3 minutes', now() + interval '3 minutes', NULL::timestamptz, '{"k": "v"}'::jsonb)$$,
    'claim_and_start_tasks should return the task running for the worker at attempt 1, claimed, started and heartbeating at taskpool_now()');
SELECT results_eq(
    $$SELECT status, worker_id, attempt, claimed_at, started_at, last_heartbeat_at
      FROM worker_tasks WHERE id = tests.fx('start')$$,
    $$VALUES ('running'::text, 'w-start'::text, 1, now() + interval '3 minutes', now() + interval '3 minutes',
              now() + interval '3 minutes')$$,
    'claim_and_start_tasks should store the running task in the task row');
SELECT set_taskpool_clock_offset('0') AS shifted \gset
SELECT is((SELECT count(*) FROM claim_and_start_tasks('t31_start', 'w-start-2', 5)), 0::bigint,
    'claim_and_start_tasks should return no row when no task of the role is ready');

-- A task released once comes back at its next attempt.
INSERT INTO tests.fx SELECT 'restart', (tests.make_claimed_task(worker_id := 'w-re-1', role := 't31_restart')).id;
DO $$ BEGIN PERFORM release_task(tests.fx('restart'), 'w-re-1', 1, tests.claim_token(tests.fx('restart'), 1)); END $$;
SELECT results_eq(
    $$SELECT id, status, worker_id, attempt, claimed_at, started_at, last_heartbeat_at
      FROM claim_and_start_tasks('t31_restart', 'w-re-2')$$,
    $$VALUES (tests.fx('restart'), 'running'::text, 'w-re-2'::text, 2, now(), now(), now())$$,
    'claim_and_start_tasks should start a released task at its next attempt, 2, for the new worker');
SELECT results_eq(
    $$SELECT attempt, worker_id, outcome FROM worker_task_attempts WHERE task_id = tests.fx('restart')$$,
    $$VALUES (1, 'w-re-1'::text, 'released'::text)$$,
    'Claiming and starting should add no attempt row: only the released attempt 1 is in the history');

/****************************************************************************/
-- claim_and_start_tasks: the default max_tasks is 1

INSERT INTO tests.fx VALUES
    ('def_1', tests.make_task(role := 't31_default', created_at := now() - interval '3 minutes')),
    ('def_2', tests.make_task(role := 't31_default', created_at := now() - interval '2 minutes')),
    ('def_3', tests.make_task(role := 't31_default', created_at := now() - interval '1 minute'));

SELECT results_eq(
    $$SELECT id, status FROM claim_and_start_tasks('t31_default', 'w-def')$$,
    $$VALUES (tests.fx('def_1'), 'running'::text)$$,
    'Without max_tasks, claim_and_start_tasks should take exactly one task, the first in claim order');
SELECT set_eq(
    $$SELECT id FROM worker_tasks WHERE role = 't31_default' AND status = 'pending'$$,
    ARRAY[tests.fx('def_2'), tests.fx('def_3')],
    'The other ready tasks should stay pending');

/****************************************************************************/
-- claim_and_start_tasks: order is priority DESC, then created_at, then id

-- Created out of order, so that neither id order nor insertion order can pass for claim order.
INSERT INTO tests.fx VALUES
    ('o_pm5',    tests.make_task(role := 't31_order', priority := -5, created_at := now() - interval '5 hours')),
    ('o_p0_new', tests.make_task(role := 't31_order', priority := 0,  created_at := now() - interval '1 hour')),
    ('o_p5_new', tests.make_task(role := 't31_order', priority := 5,  created_at := now() - interval '1 hour')),
    ('o_p0_old', tests.make_task(role := 't31_order', priority := 0,  created_at := now() - interval '3 hours')),
    ('o_p10',    tests.make_task(role := 't31_order', priority := 10, created_at := now())),
    ('o_tie_1',  tests.make_task(role := 't31_order', priority := 0,  created_at := now() - interval '2 hours')),
    ('o_tie_2',  tests.make_task(role := 't31_order', priority := 0,  created_at := now() - interval '2 hours')),
    ('o_p5_old', tests.make_task(role := 't31_order', priority := 5,  created_at := now() - interval '2 hours'));

SELECT results_eq(
    $$SELECT id, status FROM claim_and_start_tasks('t31_order', 'w-order-1', 5)$$,
    $$SELECT tests.fx(e.name), 'running'::text
      FROM (VALUES ('o_p10', 1), ('o_p5_old', 2), ('o_p5_new', 3), ('o_p0_old', 4), ('o_tie_1', 5)) AS e(name, pos)
      ORDER BY e.pos$$,
    'A batch of five should start the first five tasks in claim order, returned in that order');
SELECT results_eq(
    $$SELECT id, status FROM claim_and_start_tasks('t31_order', 'w-order-2', 1000)$$,
    $$SELECT tests.fx(e.name), 'running'::text
      FROM (VALUES ('o_tie_2', 1), ('o_p0_new', 2), ('o_pm5', 3)) AS e(name, pos) ORDER BY e.pos$$,
    'The next batch should start the rest by priority DESC, created_at, then id, and accept max_tasks 1000');

/****************************************************************************/
-- claim_and_start_tasks: scheduled_for

INSERT INTO tests.fx VALUES
    ('s_future', tests.make_task(role := 't31_sched', priority := 10, scheduled_for := now() + interval '1 minute')),
    ('s_past',   tests.make_task(role := 't31_sched', priority := 0,  scheduled_for := now() - interval '1 minute')),
    ('s_now',    tests.make_task(role := 't31_sched', priority := -1, scheduled_for := now()));

SELECT results_eq(
    $$SELECT id FROM claim_and_start_tasks('t31_sched', 'w-sched', 10)$$,
    $$VALUES (tests.fx('s_past')), (tests.fx('s_now'))$$,
    'claim_and_start_tasks should take tasks scheduled in the past or for now, and skip one scheduled in the future');
SELECT is((SELECT status FROM worker_tasks WHERE id = tests.fx('s_future')), 'pending',
    'A task scheduled in the future should stay pending');

/****************************************************************************/
-- claim_and_start_tasks: one task per store

INSERT INTO tests.fx VALUES
    ('store_1', tests.make_store(name := 'Fast path store 1')),
    ('store_2', tests.make_store(name := 'Fast path store 2')),
    ('store_3', tests.make_store(name := 'Fast path store 3')),
    ('store_4', tests.make_store(name := 'Fast path store 4')),
    ('store_5', tests.make_store(name := 'Fast path store 5')),
    ('store_f', tests.make_store(name := 'Fast path follow-up store'));

INSERT INTO tests.fx VALUES
    ('b_s1_p5',   tests.make_task(role := 't31_batch', dispensary_id := tests.fx('store_1')::integer, priority := 5)),
    ('b_s1_p3',   tests.make_task(role := 't31_batch', dispensary_id := tests.fx('store_1')::integer, priority := 3)),
    ('b_s2_p4',   tests.make_task(role := 't31_batch', dispensary_id := tests.fx('store_2')::integer, priority := 4)),
    ('b_none_p2', tests.make_task(role := 't31_batch', priority := 2));

SELECT results_eq(
    $$SELECT id, status, worker_id FROM claim_and_start_tasks('t31_batch', 'w-batch', 10)$$,
    $$SELECT tests.fx(e.name), 'running'::text, 'w-batch'::text
      FROM (VALUES ('b_s1_p5', 1), ('b_s2_p4', 2), ('b_none_p2', 3)) AS e(name, pos) ORDER BY e.pos$$,
    'A batch should start at most one task per store, the best of each');
SELECT is((SELECT status FROM worker_tasks WHERE id = tests.fx('b_s1_p3')), 'pending',
    'The second task of a store in the batch should stay pending');
SELECT is((SELECT count(*) FROM claim_and_start_tasks('t31_batch', 'w-batch-2', 10)), 0::bigint,
    'A second batch should take nothing while that store''s task is running');

-- A store held by another role's task, claimed or running, is skipped.
INSERT INTO tests.fx SELECT 'x_a_s3', (tests.make_claimed_task(worker_id := 'w-x-a', role := 't31_store_a',
                                                          dispensary_id := tests.fx('store_3')::integer)).id;
INSERT INTO tests.fx VALUES
    ('x_a_s4', tests.make_task(role := 't31_store_a', dispensary_id := tests.fx('store_4')::integer));
DO $$ BEGIN PERFORM claim_and_start_tasks('t31_store_a', 'w-x-a'); END $$;
INSERT INTO tests.fx VALUES
    ('x_b_s3', tests.make_task(role := 't31_store_b', dispensary_id := tests.fx('store_3')::integer, priority := 10)),
    ('x_b_s4', tests.make_task(role := 't31_store_b', dispensary_id := tests.fx('store_4')::integer, priority := 10)),
    ('x_b_s5', tests.make_task(role := 't31_store_b', dispensary_id := tests.fx('store_5')::integer, priority := 0));

SELECT results_eq(
    $$SELECT id FROM claim_and_start_tasks('t31_store_b', 'w-x-b', 10)$$,
    $$VALUES (tests.fx('x_b_s5'))$$,
    'claim_and_start_tasks should skip tasks whose store has a claimed or running task of another role');
SELECT results_eq(
    $$SELECT f.name, t.status FROM tests.fx f JOIN worker_tasks t ON t.id = f.id
      WHERE f.name IN ('x_a_s3', 'x_a_s4', 'x_b_s3', 'x_b_s4') ORDER BY f.name$$,
    $$VALUES ('x_a_s3'::text, 'claimed'::text), ('x_a_s4', 'running'), ('x_b_s3', 'pending'), ('x_b_s4', 'pending')$$,
    'The stores'' claimed and running tasks should hold them, and the skipped tasks stay pending');

/****************************************************************************/
-- claim_and_start_tasks: a platform whose circuit is open

INSERT INTO platform_governance (platform, open_until) VALUES
    ('t31_open', now() + interval '5 minutes'),
    ('t31_closed', now() - interval '1 minute');
INSERT INTO tests.fx SELECT 'c_paused', id FROM enqueue_task('t31_circuit', platform := 't31_open', priority := 100);
INSERT INTO tests.fx SELECT 'c_closed', id FROM enqueue_task('t31_circuit', platform := 't31_closed');
INSERT INTO tests.fx SELECT 'c_none', id FROM enqueue_task('t31_circuit', priority := -10);

SELECT results_eq(
    $$SELECT id FROM claim_and_start_tasks('t31_circuit', 'w-cb-1', 10)$$,
    $$VALUES (tests.fx('c_closed')), (tests.fx('c_none'))$$,
    'claim_and_start_tasks should skip the tasks of a platform whose circuit is open, and only those');
SELECT is((SELECT status FROM worker_tasks WHERE id = tests.fx('c_paused')), 'pending',
    'The paused platform''s task should stay pending');
SELECT set_taskpool_clock_offset('6 minutes') AS shifted \gset
SELECT results_eq(
    $$SELECT id, status, started_at FROM claim_and_start_tasks('t31_circuit', 'w-cb-2', 10)$$,
    $$VALUES (tests.fx('c_paused'), 'running'::text, now() + interval '6 minutes')$$,
    'Once the circuit''s open_until has passed, claim_and_start_tasks should start its tasks again');
SELECT set_taskpool_clock_offset('0') AS shifted \gset

/****************************************************************************/
-- claim_tasks keeps its behaviour: claimed, not started

INSERT INTO tests.fx VALUES
    ('cl_1', tests.make_task(role := 't31_claim', created_at := now() - interval '2 minutes')),
    ('cl_2', tests.make_task(role := 't31_claim', created_at := now() - interval '1 minute'));

SELECT results_eq(
    $$SELECT id, status, worker_id, attempt, claimed_at, started_at, last_heartbeat_at
      FROM claim_tasks('t31_claim', 'w-cl', 10)$$,
    $$VALUES (tests.fx('cl_1'), 'claimed'::text, 'w-cl'::text, 1, now(), NULL::timestamptz, now()),
             (tests.fx('cl_2'), 'claimed'::text, 'w-cl'::text, 1, now(), NULL::timestamptz, now())$$,
    'claim_tasks should still return its tasks claimed, not started (started_at NULL)');
SELECT is((SELECT status FROM start_task(tests.fx('cl_1'), 'w-cl', 1, tests.claim_token(tests.fx('cl_1'), 1))), 'running',
    'A task claim_tasks claimed should still be started by start_task');

/****************************************************************************/
-- claim_and_start_tasks: bad arguments, each refused without a change

INSERT INTO tests.fx VALUES ('err', tests.make_task(role := 't31_errors'));

SELECT throws_ok(
    $$SELECT * FROM claim_and_start_tasks('t31_no_such_role', 'w-err')$$,
    '22023', 'unknown role ''t31_no_such_role''',
    'claim_and_start_tasks should reject an unknown role');
SELECT is(tests.error_hint($$SELECT * FROM claim_and_start_tasks('t31_no_such_role', 'w-err')$$),
    (SELECT 'Known roles: ' || string_agg(r.role, ', ' ORDER BY r.role) || '.' FROM task_roles r),
    'The unknown role error should hint at the known roles');
SELECT throws_ok(
    $$SELECT * FROM claim_and_start_tasks('t31_errors', 'w-err', 0)$$,
    '22023', 'max_tasks 0 is out of range',
    'claim_and_start_tasks should reject max_tasks 0');
SELECT throws_ok(
    $$SELECT * FROM claim_and_start_tasks('t31_errors', 'w-err', 1001)$$,
    '22023', 'max_tasks 1001 is out of range',
    'claim_and_start_tasks should reject max_tasks 1001');
SELECT is(tests.error_hint($$SELECT * FROM claim_and_start_tasks('t31_errors', 'w-err', 1001)$$),
    'Claim from 1 to 1000 tasks at a time.',
    'The max_tasks error should hint at the allowed range');
SELECT throws_ok(
    $$SELECT * FROM claim_and_start_tasks('t31_errors', '', 1)$$,
    '22023', 'worker_id must be 1 to 200 characters, not 0',
    'claim_and_start_tasks should reject an empty worker_id');
SELECT throws_ok(
    $$SELECT * FROM claim_and_start_tasks(NULL, 'w-err', 1)$$,
    '22004', 'role, worker_id and max_tasks are all required',
    'claim_and_start_tasks should reject a NULL role');
SELECT throws_ok(
    $$SELECT * FROM claim_and_start_tasks('t31_errors', NULL, 1)$$,
    '22004', 'role, worker_id and max_tasks are all required',
    'claim_and_start_tasks should reject a NULL worker_id');
SELECT throws_ok(
    $$SELECT * FROM claim_and_start_tasks('t31_errors', 'w-err', NULL)$$,
    '22004', 'role, worker_id and max_tasks are all required',
    'claim_and_start_tasks should reject a NULL max_tasks');
SELECT results_eq(
    $$SELECT status, worker_id, attempt, claimed_at FROM worker_tasks WHERE id = tests.fx('err')$$,
    $$VALUES ('pending'::text, NULL::text, 0, NULL::timestamptz)$$,
    'The refused claims should leave the role''s ready task untouched');

/****************************************************************************/
-- complete_tasks: a batch of held tasks, one lost and one missing

-- d_1 and d_2 running (claim_and_start_tasks), d_3 only claimed (claim_tasks), all by w-done.
INSERT INTO tests.fx VALUES
    ('d_1', tests.make_task(role := 't31_done', priority := 2)),
    ('d_2', tests.make_task(role := 't31_done', priority := 1));
DO $$ BEGIN PERFORM claim_and_start_tasks('t31_done', 'w-done', 2); END $$;
INSERT INTO tests.fx VALUES ('d_3', tests.make_task(role := 't31_done', priority := 0));
DO $$ BEGIN PERFORM claim_tasks('t31_done', 'w-done', 1); END $$;

-- lost: started by w-done, recovered as stale, then started again by w-other at attempt 2.
INSERT INTO tests.fx VALUES ('lost', tests.make_task(role := 't31_lost'));
DO $$
BEGIN
    PERFORM claim_and_start_tasks('t31_lost', 'w-done');
    PERFORM tests.age_heartbeat(tests.fx('lost'), interval '1 hour');
    PERFORM recover_stale_tasks(30);
END;
$$;
SELECT results_eq(
    $$SELECT id, attempt, worker_id FROM claim_and_start_tasks('t31_lost', 'w-other')$$,
    $$VALUES (tests.fx('lost'), 2, 'w-other'::text)$$,
    'The lost fixture should be recovered, then started by w-other at attempt 2');
-- foreign: started by w-other at attempt 1, the attempt w-done will name (the fence is the
-- worker and the attempt together).
INSERT INTO tests.fx VALUES ('foreign', tests.make_task(role := 't31_lost'));
DO $$ BEGIN PERFORM claim_and_start_tasks('t31_lost', 'w-other'); END $$;
SELECT results_eq(
    $$SELECT f.name, t.status, t.worker_id, t.attempt FROM tests.fx f JOIN worker_tasks t ON t.id = f.id
      WHERE f.name IN ('d_1', 'd_2', 'd_3', 'foreign') ORDER BY f.name$$,
    $$VALUES ('d_1'::text, 'running'::text, 'w-done'::text, 1), ('d_2', 'running', 'w-done', 1),
             ('d_3', 'claimed', 'w-done', 1), ('foreign', 'running', 'w-other', 1)$$,
    'The batch fixtures should be held by w-done, two running and one only claimed; foreign by w-other at attempt 1');
SELECT tests.snapshot('lost');
SELECT tests.snapshot('foreign');

-- d_1 has two follow-ups and d_3 one; the lost, the foreign and the missing task each name one
-- that must never be queued. d_2's result is JSON null, d_3 has none.
CREATE TEMP TABLE batch AS
SELECT jsonb_build_array(
    jsonb_build_object('task_id', tests.fx('d_1'), 'attempt', 1, 'result', '{"n": 1}'::jsonb,
        'follow_ups', jsonb_build_array(
            jsonb_build_object('role', 't31_follow_a', 'payload', '{"from": "d_1"}'::jsonb),
            jsonb_build_object('role', 't31_follow_b', 'dispensary_id', tests.fx('store_f'), 'priority', 7))),
    jsonb_build_object('task_id', tests.fx('d_2'), 'attempt', 1, 'result', 'null'::jsonb),
    jsonb_build_object('task_id', tests.fx('d_3'), 'attempt', 1,
        'follow_ups', jsonb_build_array(jsonb_build_object('role', 't31_follow_a', 'payload', '{"from": "d_3"}'::jsonb))),
    jsonb_build_object('task_id', tests.fx('lost'), 'attempt', 1, 'result', '{"n": 4}'::jsonb,
        'follow_ups', jsonb_build_array(jsonb_build_object('role', 't31_follow_a', 'payload', '{"from": "lost"}'::jsonb))),
    jsonb_build_object('task_id', tests.fx('foreign'), 'attempt', 1, 'result', '{"n": 5}'::jsonb,
        'follow_ups', jsonb_build_array(jsonb_build_object('role', 't31_follow_a', 'payload', '{"from": "foreign"}'::jsonb))),
    -- no task has a negative id
    jsonb_build_object('task_id', -1, 'attempt', 1,
        'follow_ups', jsonb_build_array(jsonb_build_object('role', 't31_follow_a', 'payload', '{"from": "missing"}'::jsonb)))
) AS completions;

INSERT INTO answers (label, task_id, attempt, status)
SELECT 'first', c.* FROM batch b, complete_tasks('w-done', tests.with_claim_tokens(b.completions)) AS c;

SELECT results_eq(
    $$SELECT task_id, attempt, status FROM answers WHERE label = 'first' ORDER BY n$$,
    $$VALUES (tests.fx('d_1'), 1, 'completed'::text), (tests.fx('d_2'), 1, 'completed'),
             (tests.fx('d_3'), 1, 'completed'), (tests.fx('lost'), 1, 'lost'), (tests.fx('foreign'), 1, 'lost'),
             (-1::bigint, 1, 'not_found')$$,
    'complete_tasks should answer each completion in the order given: completed, lost or not_found');
SELECT results_eq(
    $$SELECT f.name, t.status, t.worker_id, t.attempt, t.result, t.started_at, t.completed_at
      FROM tests.fx f JOIN worker_tasks t ON t.id = f.id WHERE f.name IN ('d_1', 'd_2', 'd_3') ORDER BY f.name$$,
    $$VALUES ('d_1'::text, 'completed'::text, 'w-done'::text, 1, '{"n": 1}'::jsonb, now(), now()),
             ('d_2', 'completed', 'w-done', 1, NULL, now(), now()),
             ('d_3', 'completed', 'w-done', 1, NULL, NULL, now())$$,
    'complete_tasks should complete the running and the merely claimed tasks, with their results, completed now');
SELECT is((SELECT result IS NULL FROM worker_tasks WHERE id = tests.fx('d_2')), true,
    'A JSON null result should be stored as SQL NULL');
SELECT ok(tests.unchanged('lost') AND tests.unchanged('foreign'),
    'complete_tasks should leave untouched the tasks another worker holds, at a later attempt or at the same one');
SELECT bag_eq(
    $$SELECT role, status, payload, dispensary_id, priority, scheduled_for
      FROM worker_tasks WHERE role IN ('t31_follow_a', 't31_follow_b')$$,
    $$VALUES ('t31_follow_a'::text, 'pending'::text, '{"from": "d_1"}'::jsonb, NULL::integer, 0, now()),
             ('t31_follow_b', 'pending', '{}', tests.fx('store_f')::integer, 7, now()),
             ('t31_follow_a', 'pending', '{"from": "d_3"}', NULL, 0, now())$$,
    'complete_tasks should enqueue the follow-ups of the tasks it completed, and none of the lost or missing ones');
SELECT results_eq(
    $$SELECT f.name, a.attempt, a.worker_id, a.outcome
      FROM tests.fx f JOIN worker_task_attempts a ON a.task_id = f.id
      WHERE f.name IN ('d_1', 'd_2', 'd_3', 'lost') ORDER BY f.name, a.attempt$$,
    $$VALUES ('lost'::text, 1, 'w-done'::text, 'retried'::text)$$,
    'The attempt history should hold the lost task''s recovered attempt and nothing for the completed attempts');

-- The same call again, with another result for d_1: on a later clock, so that any write would
-- move updated_at.
SELECT set_taskpool_clock_offset('1 minute') AS shifted \gset
INSERT INTO answers (label, task_id, attempt, status)
SELECT 'repeat', c.*
FROM batch b, complete_tasks('w-done', tests.with_claim_tokens(jsonb_set(b.completions, '{0,result}', '{"n": 99}'))) AS c;
SELECT set_taskpool_clock_offset('0') AS shifted \gset

SELECT results_eq(
    $$SELECT task_id, attempt, status FROM answers WHERE label = 'repeat' ORDER BY n$$,
    $$SELECT task_id, attempt, status FROM answers WHERE label = 'first' ORDER BY n$$,
    'A repeated complete_tasks should give the same answers: completed for the attempts it completed before');
SELECT results_eq(
    $$SELECT f.name, t.status, t.result, t.completed_at, t.updated_at
      FROM tests.fx f JOIN worker_tasks t ON t.id = f.id WHERE f.name IN ('d_1', 'd_2', 'd_3') ORDER BY f.name$$,
    $$VALUES ('d_1'::text, 'completed'::text, '{"n": 1}'::jsonb, now(), now()),
             ('d_2', 'completed', NULL, now(), now()),
             ('d_3', 'completed', NULL, now(), now())$$,
    'A repeated complete_tasks should change nothing: first result kept, completed_at and updated_at unchanged');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role IN ('t31_follow_a', 't31_follow_b')), 3::bigint,
    'A repeated complete_tasks should not enqueue the follow-ups a second time');
SELECT ok(tests.unchanged('lost') AND tests.unchanged('foreign'),
    'A repeated complete_tasks should still leave the lost tasks untouched');

SELECT is_empty($$SELECT * FROM complete_tasks('w-done', tests.with_claim_tokens('[]'))$$,
    'complete_tasks should answer an empty batch with no row');

/****************************************************************************/
-- complete_tasks with arrays: the worker's form, which the JSON form calls

INSERT INTO tests.fx VALUES ('a_1', tests.make_task(role := 't31_arrays', priority := 2));
INSERT INTO tests.fx VALUES ('a_2', tests.make_task(role := 't31_arrays', priority := 1));
INSERT INTO tests.fx VALUES ('a_3', tests.make_task(role := 't31_arrays', priority := 0));
DO $$ BEGIN PERFORM claim_and_start_tasks('t31_arrays', 'w-arr', 3); END $$;
CREATE TEMP TABLE arr AS
SELECT array_agg(t.id ORDER BY t.id) AS ids, array_agg(t.attempt ORDER BY t.id) AS attempts,
       array_agg(t.claim_token ORDER BY t.id) AS tokens
FROM worker_tasks t WHERE t.role = 't31_arrays';
SELECT tests.snapshot('a_1');

SELECT throws_ok(
    $$SELECT * FROM complete_tasks('w-arr', (SELECT ids FROM arr), (SELECT attempts[1:2] FROM arr), (SELECT tokens FROM arr))$$,
    '22023', 'task_ids, attempts, claim_tokens, results and follow_ups need one element per task, not 3, 2, 3, none and none',
    'complete_tasks with arrays should refuse arrays of different lengths, saying each length');
SELECT throws_ok(
    $$SELECT * FROM complete_tasks('w-arr', (SELECT ids FROM arr), NULL, (SELECT tokens FROM arr))$$,
    '22004', 'worker_id, task_ids, attempts and claim_tokens are all required',
    'complete_tasks with arrays should refuse a missing array');
SELECT throws_ok(
    $$SELECT * FROM complete_tasks('w-arr', (SELECT ids FROM arr), (SELECT attempts[1:1] || NULL::integer || attempts[3:3] FROM arr),
                                   (SELECT tokens FROM arr))$$,
    '22023', 'task_ids[2], attempts[2] and claim_tokens[2] are all required',
    'complete_tasks with arrays should name an element that is NULL');
SELECT throws_ok(
    $$SELECT * FROM complete_tasks('w-arr', (SELECT ids[1:1] || ids[1:1] FROM arr), (SELECT attempts[1:2] FROM arr),
                                   (SELECT tokens[1:2] FROM arr))$$,
    '22023', format('task_ids[2] repeats task %s', tests.fx('a_1')),
    'complete_tasks with arrays should refuse a batch that names a task twice');
SELECT throws_ok(
    $$SELECT * FROM complete_tasks('w-arr', (SELECT ids FROM arr), (SELECT attempts FROM arr), (SELECT tokens FROM arr),
                                   NULL, ARRAY[NULL, '{"role": "t31_follow_a"}', NULL]::jsonb[])$$,
    '22023', 'follow_ups[2] is not an array',
    'complete_tasks with arrays should refuse follow_ups that are not an array');
SELECT throws_ok(
    $$SELECT * FROM complete_tasks('w-arr', (SELECT array_agg(-i) FROM generate_series(1, 1001) AS i),
                                   (SELECT array_agg(1) FROM generate_series(1, 1001)),
                                   (SELECT array_agg(gen_random_uuid()) FROM generate_series(1, 1001)))$$,
    '54000', '1001 tasks given; at most 1000 go in one call',
    'complete_tasks with arrays should refuse more than 1000 tasks');
SELECT ok(tests.unchanged('a_1'), 'The refused calls should have changed nothing');

SELECT results_eq(
    $$SELECT c.task_id, c.attempt, c.status
      FROM arr, complete_tasks('w-arr', arr.ids, arr.attempts, arr.tokens[1:2] || gen_random_uuid(),
                               ARRAY['{"n": 1}', NULL, '{"n": 3}']::jsonb[],
                               ARRAY['[{"role": "t31_follow_a", "payload": {"from": "a_1"}}]', NULL, NULL]::jsonb[]) c$$,
    format($$VALUES (%s::bigint, 1, 'completed'::text), (%s, 1, 'completed'), (%s, 1, 'lost')$$,
           tests.fx('a_1'), tests.fx('a_2'), tests.fx('a_3')),
    'complete_tasks with arrays should answer each task in the order given: another claim''s token is lost');
SELECT results_eq(
    $$SELECT id, status, result FROM worker_tasks WHERE role = 't31_arrays' ORDER BY id$$,
    format($$VALUES (%s::bigint, 'completed'::text, '{"n": 1}'::jsonb), (%s, 'completed', NULL), (%s, 'running', NULL)$$,
           tests.fx('a_1'), tests.fx('a_2'), tests.fx('a_3')),
    'complete_tasks with arrays should record each result, and leave the lost task running');
SELECT is((SELECT parent_id FROM worker_tasks WHERE role = 't31_follow_a' AND payload = '{"from": "a_1"}'), tests.fx('a_1'),
    'complete_tasks with arrays should enqueue a task''s follow-ups, remembering it as their parent');
SELECT is_empty($$SELECT * FROM complete_tasks('w-arr', '{}'::bigint[], '{}'::integer[], '{}'::uuid[])$$,
    'complete_tasks with arrays should answer an empty batch with no row');

/****************************************************************************/
-- complete_tasks: a bad follow-up fails the whole call

INSERT INTO tests.fx VALUES ('bad_1', tests.make_task(role := 't31_bad', priority := 1));
DO $$ BEGIN PERFORM claim_and_start_tasks('t31_bad', 'w-bad'); END $$;
INSERT INTO tests.fx VALUES ('bad_2', tests.make_task(role := 't31_bad', priority := 0));
DO $$ BEGIN PERFORM claim_tasks('t31_bad', 'w-bad', 1); END $$;
SELECT tests.snapshot('bad_1');
SELECT tests.snapshot('bad_2');

SELECT throws_ok(
    format('SELECT * FROM complete_tasks(%L, tests.with_claim_tokens(%L))', 'w-bad', jsonb_build_array(
        jsonb_build_object('task_id', tests.fx('bad_1'), 'attempt', 1, 'result', '{"ok": true}'::jsonb,
            'follow_ups', jsonb_build_array(jsonb_build_object('role', 't31_follow_a', 'payload', '{"from": "bad_1"}'::jsonb))),
        jsonb_build_object('task_id', tests.fx('bad_2'), 'attempt', 1,
            'follow_ups', jsonb_build_array(jsonb_build_object('role', 't31_no_such_role'))))),
    '22023', 'follow_ups[2][0]: unknown role ''t31_no_such_role''',
    'complete_tasks should fail the whole call with the enqueue error of a bad follow-up');
SELECT ok(tests.unchanged('bad_1') AND tests.unchanged('bad_2'),
    'The failed call should complete neither task, not even the one whose follow-ups were good');
SELECT is((SELECT count(*) FROM worker_tasks WHERE role = 't31_follow_a' AND payload = '{"from": "bad_1"}'), 0::bigint,
    'The failed call should enqueue no follow-up');
SELECT results_eq(
    format('SELECT task_id, status FROM complete_tasks(%L, tests.with_claim_tokens(%L))', 'w-bad', jsonb_build_array(
        jsonb_build_object('task_id', tests.fx('bad_1'), 'attempt', 1),
        jsonb_build_object('task_id', tests.fx('bad_2'), 'attempt', 1))),
    $$VALUES (tests.fx('bad_1'), 'completed'::text), (tests.fx('bad_2'), 'completed')$$,
    'After the failed call, both tasks should still be completable');

/****************************************************************************/
-- complete_tasks: malformed input, each refused whole

INSERT INTO tests.fx VALUES ('m_1', tests.make_task(role := 't31_malformed'));
DO $$ BEGIN PERFORM claim_and_start_tasks('t31_malformed', 'w-mal'); END $$;
SELECT tests.snapshot('m_1');
-- A good completion of m_1, put first in each bad call: the call must not record it.
CREATE TEMP TABLE good AS
SELECT jsonb_build_object('task_id', tests.fx('m_1'), 'attempt', 1, 'result', '{"ok": true}'::jsonb) AS entry;

SELECT throws_ok(
    (SELECT format('SELECT * FROM complete_tasks(%L, tests.with_claim_tokens(%L))', 'w-mal', g.entry) FROM good g),
    '22023', 'completions must be a JSON array of {task_id, attempt, claim_token, result, follow_ups} objects, not object',
    'complete_tasks should reject completions that are not a JSON array');
SELECT is(
    tests.error_hint((SELECT format('SELECT * FROM complete_tasks(%L, tests.with_claim_tokens(%L))', 'w-mal', jsonb_build_array(g.entry, 5))
                        FROM good g)),
    'Each completion is {"task_id": ..., "attempt": ..., "claim_token": "...", "result": ..., "follow_ups": [...]}.',
    'A malformed completion error should hint at the shape of a completion');
SELECT throws_ok(
    (SELECT format('SELECT * FROM complete_tasks(%L, tests.with_claim_tokens(%L))', 'w-mal', jsonb_build_array(g.entry, 5)) FROM good g),
    '22023', 'completions[1] is not an object',
    'complete_tasks should reject a completion that is not an object');
SELECT throws_ok(
    (SELECT format('SELECT * FROM complete_tasks(%L, tests.with_claim_tokens(%L))', 'w-mal',
                   jsonb_build_array(g.entry, jsonb_build_object('task_id', 'seven', 'attempt', 1))) FROM good g),
    '22023', 'completions[1] needs an integer task_id',
    'complete_tasks should reject a task_id that is a string');
SELECT throws_ok(
    (SELECT format('SELECT * FROM complete_tasks(%L, tests.with_claim_tokens(%L))', 'w-mal',
                   jsonb_build_array(g.entry, jsonb_build_object('task_id', 1.5, 'attempt', 1))) FROM good g),
    '22023', 'completions[1] needs an integer task_id',
    'complete_tasks should reject a task_id that is not a whole number');
SELECT throws_ok(
    (SELECT format('SELECT * FROM complete_tasks(%L, tests.with_claim_tokens(%L))', 'w-mal',
                   jsonb_build_array(g.entry, jsonb_build_object('task_id', -1))) FROM good g),
    '22023', 'completions[1] needs an integer attempt',
    'complete_tasks should reject a completion without an attempt');
SELECT throws_ok(
    (SELECT format('SELECT * FROM complete_tasks(%L, tests.with_claim_tokens(%L))', 'w-mal',
                   jsonb_build_array(g.entry || jsonb_build_object('follow_ups', jsonb_build_object('role', 't31_follow_a'))))
     FROM good g),
    '22023', 'completions[0] has follow_ups that are not an array',
    'complete_tasks should reject follow_ups that are not an array');
SELECT throws_ok(
    (SELECT format('SELECT * FROM complete_tasks(%L, tests.with_claim_tokens(%L))', 'w-mal',
                   jsonb_build_array(g.entry, jsonb_build_object('task_id', -1, 'attempt', 1, 'follow_up', '[]'::jsonb,
                                                                 'results', '{}'::jsonb))) FROM good g),
    '22023', 'completions[1] has unknown fields: follow_up, results',
    'complete_tasks should reject a misspelt field rather than drop its value');
SELECT results_eq(
    $$SELECT task_id, attempt, status FROM complete_tasks('w-mal', tests.with_claim_tokens('[{"task_id": 3000000000, "attempt": 1.0}]'))$$,
    $$VALUES (3000000000::bigint, 1, 'not_found')$$,
    'complete_tasks should take task ids beyond the integer range, and whole numbers written as decimals');
SELECT throws_ok(
    (SELECT format('SELECT * FROM complete_tasks(%L, tests.with_claim_tokens(%L))', 'w-mal', jsonb_build_array(g.entry, g.entry)) FROM good g),
    '22023', format('completions[1] repeats task %s', tests.fx('m_1')),
    'complete_tasks should reject a batch that names a task twice');
SELECT throws_ok(
    (SELECT format('SELECT * FROM complete_tasks(%L, tests.with_claim_tokens(%L))', 'w-mal',
                   jsonb_build_array(g.entry) || (SELECT jsonb_agg(jsonb_build_object('task_id', -i, 'attempt', 1))
                                                  FROM generate_series(1, 1000) AS i))
     FROM good g),
    '54000', 'completions has 1001 entries; at most 1000 go in one call',
    'complete_tasks should reject more than 1000 completions');
SELECT throws_ok(
    (SELECT format('SELECT * FROM complete_tasks(NULL, tests.with_claim_tokens(%L))', jsonb_build_array(g.entry)) FROM good g),
    '22004', 'worker_id and completions are both required',
    'complete_tasks should reject a NULL worker_id');
SELECT throws_ok(
    $$SELECT * FROM complete_tasks('w-mal', tests.with_claim_tokens(NULL))$$,
    '22004', 'worker_id and completions are both required',
    'complete_tasks should reject NULL completions');
SELECT ok(tests.unchanged('m_1'),
    'None of the refused calls should change the task they named');

SELECT results_eq(
    $$SELECT c.status, count(*)
      FROM good g,
           complete_tasks('w-mal', tests.with_claim_tokens(jsonb_build_array(g.entry)
                                   || (SELECT jsonb_agg(jsonb_build_object('task_id', -i, 'attempt', 1))
                                       FROM generate_series(1, 999) AS i))) AS c
      GROUP BY c.status ORDER BY c.status$$,
    $$VALUES ('completed'::text, 1::bigint), ('not_found', 999)$$,
    'complete_tasks should accept exactly 1000 completions in one call');

/****************************************************************************/
-- Privileges

SELECT function_privs_are('public', 'claim_and_start_tasks', ARRAY['text', 'text', 'integer'], 'taskpool_worker',
    ARRAY['EXECUTE'], 'Should let taskpool_worker execute claim_and_start_tasks');
SELECT function_privs_are('public', 'complete_tasks', ARRAY['text', 'jsonb'], 'taskpool_worker',
    ARRAY['EXECUTE'], 'Should let taskpool_worker execute complete_tasks');
SELECT function_privs_are('public', '_claim_tasks', ARRAY['text', 'text', 'integer', 'boolean'], 'taskpool_worker',
    ARRAY[]::text[], 'Should not let taskpool_worker execute the internal _claim_tasks');
SELECT results_eq(
    $$SELECT has_function_privilege('public', f, 'EXECUTE')
      FROM unnest(ARRAY['claim_and_start_tasks(text, text, integer)', 'complete_tasks(text, jsonb)',
                        '_claim_tasks(text, text, integer, boolean)']) WITH ORDINALITY AS u(f, n)
      ORDER BY n$$,
    $$VALUES (false), (false), (false)$$,
    'Should let PUBLIC execute none of claim_and_start_tasks, complete_tasks and _claim_tasks');

-- Prepared as superuser; the ids go into psql variables, as the temp tables are not the worker's.
SELECT tests.make_task(role := 't31_priv', priority := 2) AS p1_id \gset
SELECT tests.make_task(role := 't31_priv', priority := 1) AS p2_id \gset

SET ROLE taskpool_worker;

SELECT results_eq(
    $$SELECT id, status, worker_id, attempt FROM claim_and_start_tasks('t31_priv', 'w-priv', 2)$$,
    format($$VALUES (%s::bigint, 'running'::text, 'w-priv'::text, 1), (%s, 'running', 'w-priv', 1)$$, :p1_id, :p2_id),
    'Should let taskpool_worker claim and start a batch');
SELECT results_eq(
    format($$SELECT * FROM complete_tasks('w-priv', tests.with_claim_tokens('[{"task_id": %s, "attempt": 1, "result": {"ok": true}},
                                                      {"task_id": %s, "attempt": 1}]'))$$, :p1_id, :p2_id),
    format($$VALUES (%s::bigint, 1, 'completed'::text), (%s, 1, 'completed')$$, :p1_id, :p2_id),
    'Should let taskpool_worker complete its batch');
SELECT throws_ok(
    $$SELECT * FROM _claim_tasks('t31_priv', 'w-priv', 1, true)$$,
    '42501', 'permission denied for function _claim_tasks',
    'Should refuse taskpool_worker the internal _claim_tasks');

RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
