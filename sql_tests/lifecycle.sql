-- The worker side of a task's life: start_task, heartbeat_task, complete_task (with follow-ups),
-- fail_task (retry, backoff, permanent failure, tests.claim_token(retry, permanent failure)), snooze_task and release_task, and the attempt
-- history each of them leaves. The fence (calls by a worker that lost its attempt) has its own file.
BEGIN;
SELECT plan(57);

-- Test-local roles: a known backoff (10 seconds doubling up to 5 minutes, no jitter), and a role
-- per scenario that leaves a ready task behind, so that no later fixture claims it by mistake.
INSERT INTO task_roles (role, requires_store, max_retries, backoff_base, backoff_cap, backoff_jitter) VALUES
    ('test_life',        false, 3, '10 seconds', '5 minutes', 'none'),
    ('test_backoff',     false, 3, '10 seconds', '5 minutes', 'none'),
    ('test_follow_a',    false, 3, '10 seconds', '5 minutes', 'none'),
    ('test_follow_b',    true,  3, '10 seconds', '5 minutes', 'none'),
    ('test_retry_past',  false, 3, '10 seconds', '5 minutes', 'none'),
    ('test_snooze_past', false, 3, '10 seconds', '5 minutes', 'none'),
    ('test_release',     false, 3, '10 seconds', '5 minutes', 'none'),
    ('test_rounds',      false, 3, '10 seconds', '5 minutes', 'none');

-- Fixtures are named in tests.fx (sequences are not rolled back, so ids are never literals).
-- calls: the rows the worker-side calls returned, in call order.
CREATE TEMP TABLE calls (n serial PRIMARY KEY, label text NOT NULL, t worker_tasks NOT NULL);

/****************************************************************************/
-- Structure

SELECT has_function('public', 'start_task', ARRAY['bigint', 'text', 'integer', 'uuid'],
    'Should have start_task(task_id, worker_id, attempt, tests.claim_token(task_id, attempt))');
SELECT function_returns('public', 'start_task', ARRAY['bigint', 'text', 'integer', 'uuid'], 'worker_tasks',
    'start_task should return worker_tasks');
SELECT has_function('public', 'heartbeat_task', ARRAY['bigint', 'text', 'integer', 'uuid'],
    'Should have heartbeat_task(task_id, worker_id, attempt, tests.claim_token(task_id, attempt))');
SELECT function_returns('public', 'heartbeat_task', ARRAY['bigint', 'text', 'integer', 'uuid'], 'text',
    'heartbeat_task should return text');
SELECT has_function('public', 'complete_task', ARRAY['bigint', 'text', 'integer', 'uuid', 'jsonb', 'jsonb'],
    'Should have complete_task(task_id, worker_id, attempt, tests.claim_token(task_id, attempt), result, follow_ups)');
SELECT function_returns('public', 'complete_task', ARRAY['bigint', 'text', 'integer', 'uuid', 'jsonb', 'jsonb'],
    'worker_tasks', 'complete_task should return worker_tasks');
SELECT has_function('public', 'fail_task',
    ARRAY['bigint', 'text', 'integer', 'uuid', 'text', 'boolean', 'timestamp with time zone', 'text', 'jsonb'],
    'Should have fail_task(task_id, worker_id, attempt, tests.claim_token(task_id, attempt), error_message, retryable, retry_at, error_details, error_data)');
SELECT function_returns('public', 'fail_task',
    ARRAY['bigint', 'text', 'integer', 'uuid', 'text', 'boolean', 'timestamp with time zone', 'text', 'jsonb'],
    'worker_tasks', 'fail_task should return worker_tasks');
SELECT has_function('public', 'snooze_task', ARRAY['bigint', 'text', 'integer', 'uuid', 'timestamp with time zone'],
    'Should have snooze_task(task_id, worker_id, attempt, tests.claim_token(task_id, attempt), until)');
SELECT function_returns('public', 'snooze_task', ARRAY['bigint', 'text', 'integer', 'uuid', 'timestamp with time zone'],
    'worker_tasks', 'snooze_task should return worker_tasks');
SELECT has_function('public', 'release_task', ARRAY['bigint', 'text', 'integer', 'uuid'],
    'Should have release_task(task_id, worker_id, attempt, tests.claim_token(task_id, attempt))');
SELECT function_returns('public', 'release_task', ARRAY['bigint', 'text', 'integer', 'uuid'], 'worker_tasks',
    'release_task should return worker_tasks');
SELECT has_function('public', '_retry_delay', ARRAY['text', 'integer', 'interval', 'interval'],
    'Should have _retry_delay(role, retry_count, backoff_base, backoff_cap)');
SELECT function_returns('public', '_retry_delay', ARRAY['text', 'integer', 'interval', 'interval'], 'interval',
    '_retry_delay should return interval');

/****************************************************************************/
-- start_task

INSERT INTO tests.fx SELECT 'start', (tests.make_claimed_task(worker_id := 'w-start', role := 'test_life')).id;
DO $$ BEGIN PERFORM tests.age_heartbeat(tests.fx('start'), interval '5 minutes'); END $$;
INSERT INTO calls (label, t) SELECT 'start', s FROM start_task(tests.fx('start'), 'w-start', 1, tests.claim_token(tests.fx('start'), 1)) AS s;

SELECT results_eq(
    $$SELECT (t).id, (t).status, (t).worker_id, (t).attempt, (t).started_at, (t).last_heartbeat_at
      FROM calls WHERE label = 'start'$$,
    $$VALUES (tests.fx('start'), 'running'::text, 'w-start'::text, 1, now(), now())$$,
    'start_task should make a claimed task running, started and heartbeating now');
SELECT results_eq(
    $$SELECT status, started_at, last_heartbeat_at FROM worker_tasks WHERE id = tests.fx('start')$$,
    $$VALUES ('running'::text, now(), now())$$,
    'start_task should store the start in the task row');

-- Backdated, so that a second start that wrote anything would show.
UPDATE worker_tasks SET started_at = now() - interval '1 minute' WHERE id = tests.fx('start');
DO $$ BEGIN PERFORM tests.age_heartbeat(tests.fx('start'), interval '1 minute'); END $$;
SELECT results_eq(
    $$SELECT * FROM start_task(tests.fx('start'), 'w-start', 1, tests.claim_token(tests.fx('start'), 1))$$,
    $$SELECT * FROM worker_tasks WHERE id = tests.fx('start')$$,
    'A repeated start_task should return the running task');
SELECT results_eq(
    $$SELECT status, started_at, last_heartbeat_at FROM worker_tasks WHERE id = tests.fx('start')$$,
    $$VALUES ('running'::text, now() - interval '1 minute', now() - interval '1 minute')$$,
    'A repeated start_task should change nothing');

INSERT INTO tests.fx VALUES ('start_pending', tests.make_task(role := 'test_life', scheduled_for := now() + interval '1 day'));
SELECT throws_ok(
    format('SELECT * FROM start_task(%s, %L, 0, tests.claim_token(%1$s, 0))', tests.fx('start_pending'), 'w-start'),
    '55000', format('task %s attempt 0 is not owned by worker ''w-start''', tests.fx('start_pending')),
    'start_task should refuse a pending task');
SELECT results_eq(
    $$SELECT status, attempt, started_at FROM worker_tasks WHERE id = tests.fx('start_pending')$$,
    $$VALUES ('pending'::text, 0, NULL::timestamptz)$$,
    'A refused start_task should leave the pending task untouched');

/****************************************************************************/
-- heartbeat_task

INSERT INTO tests.fx SELECT 'hb', (tests.make_claimed_task(worker_id := 'w-hb', role := 'test_life')).id;
DO $$ BEGIN PERFORM tests.age_heartbeat(tests.fx('hb'), interval '5 minutes'); END $$;
SELECT is((SELECT last_heartbeat_at FROM worker_tasks WHERE id = tests.fx('hb')), now() - interval '5 minutes',
    'The heartbeat fixture should backdate the last heartbeat');
SELECT is(heartbeat_task(tests.fx('hb'), 'w-hb', 1, tests.claim_token(tests.fx('hb'), 1)), 'continue',
    'heartbeat_task should answer continue to the worker that owns the attempt');
SELECT results_eq(
    $$SELECT status, last_heartbeat_at FROM worker_tasks WHERE id = tests.fx('hb')$$,
    $$VALUES ('claimed'::text, now())$$,
    'heartbeat_task should refresh last_heartbeat_at and leave the status alone');

/****************************************************************************/
-- complete_task

INSERT INTO tests.fx SELECT 'done_running',
    (tests.make_claimed_task(worker_id := 'w-done-1', role := 'test_life', started := true)).id;
INSERT INTO calls (label, t)
SELECT 'done_running', c FROM complete_task(tests.fx('done_running'), 'w-done-1', 1, tests.claim_token(tests.fx('done_running'), 1), '{"products": 118}') AS c;
SELECT results_eq(
    $$SELECT (t).id, (t).status, (t).result, (t).completed_at, (t).started_at, (t).worker_id, (t).attempt
      FROM calls WHERE label = 'done_running'$$,
    $$VALUES (tests.fx('done_running'), 'completed'::text, '{"products": 118}'::jsonb, now(), now(),
              'w-done-1'::text, 1)$$,
    'complete_task should complete a running task with its result, completed now');
SELECT results_eq(
    $$SELECT status, result, completed_at FROM worker_tasks WHERE id = tests.fx('done_running')$$,
    $$VALUES ('completed'::text, '{"products": 118}'::jsonb, now())$$,
    'complete_task should store the completion in the task row');
SELECT is((SELECT count(*) FROM worker_task_attempts WHERE task_id = tests.fx('done_running')), 0::bigint,
    'A completion should add no attempt row: the task row is that attempt''s record');

INSERT INTO tests.fx SELECT 'done_claimed', (tests.make_claimed_task(worker_id := 'w-done-2', role := 'test_life')).id;
SELECT results_eq(
    $$SELECT id, status, result, completed_at, started_at
      FROM complete_task(tests.fx('done_claimed'), 'w-done-2', 1, tests.claim_token(tests.fx('done_claimed'), 1), '{"products": 7}')$$,
    $$VALUES (tests.fx('done_claimed'), 'completed'::text, '{"products": 7}'::jsonb, now(), NULL::timestamptz)$$,
    'complete_task should complete a claimed task that was never started');

-- Follow-ups, and a repeated completion.
INSERT INTO tests.fx VALUES ('store_1', tests.make_store(name := 'Lifecycle store 1'));
INSERT INTO tests.fx SELECT 'done_fu', (tests.make_claimed_task(worker_id := 'w-fu', role := 'test_life', started := true)).id;
CREATE TEMP TABLE follow_ups AS
SELECT jsonb_build_array(
           jsonb_build_object('role', 'test_follow_a', 'payload', '{"payload_id": 9}'::jsonb),
           jsonb_build_object('role', 'test_follow_b', 'dispensary_id', tests.fx('store_1'), 'priority', 7)) AS specs;

INSERT INTO calls (label, t)
SELECT 'done_fu', c
FROM follow_ups f, complete_task(tests.fx('done_fu'), 'w-fu', 1, tests.claim_token(tests.fx('done_fu'), 1), '{"ok": true}', f.specs) AS c;
SELECT results_eq(
    $$SELECT (t).status, (t).result FROM calls WHERE label = 'done_fu'$$,
    $$VALUES ('completed'::text, '{"ok": true}'::jsonb)$$,
    'complete_task with follow-ups should complete the task');
SELECT bag_eq(
    $$SELECT role, status, payload, dispensary_id, priority, scheduled_for
      FROM worker_tasks WHERE role IN ('test_follow_a', 'test_follow_b')$$,
    $$VALUES ('test_follow_a'::text, 'pending'::text, '{"payload_id": 9}'::jsonb, NULL::integer, 0, now()),
             ('test_follow_b'::text, 'pending'::text, '{}'::jsonb, tests.fx('store_1')::integer, 7, now())$$,
    'complete_task should enqueue each follow-up, pending and ready now');

SELECT results_eq(
    $$SELECT * FROM follow_ups f, complete_task(tests.fx('done_fu'), 'w-fu', 1, tests.claim_token(tests.fx('done_fu'), 1), '{"ok": false}', f.specs)$$,
    $$SELECT f.*, t.* FROM follow_ups f, worker_tasks t WHERE t.id = tests.fx('done_fu')$$,
    'A repeated complete_task by the same owner should return the completed task');
SELECT results_eq(
    $$SELECT status, result, completed_at FROM worker_tasks WHERE id = tests.fx('done_fu')$$,
    $$VALUES ('completed'::text, '{"ok": true}'::jsonb, now())$$,
    'A repeated complete_task should keep the first result');
SELECT is(
    (SELECT count(*) FROM worker_tasks WHERE role IN ('test_follow_a', 'test_follow_b')), 2::bigint,
    'A repeated complete_task should not enqueue its follow-ups twice');

/****************************************************************************/
-- fail_task: retry with backoff

INSERT INTO tests.fx SELECT 'retry',
    (tests.make_claimed_task(worker_id := 'w-fail', role := 'test_backoff', started := true)).id;
DO $$ BEGIN PERFORM tests.age_heartbeat(tests.fx('retry'), interval '1 minute'); END $$;
INSERT INTO calls (label, t) SELECT 'retry', f FROM fail_task(tests.fx('retry'), 'w-fail', 1, tests.claim_token(tests.fx('retry'), 1), 'HTTP 503') AS f;

SELECT results_eq(
    $$SELECT (t).status, (t).retry_count, (t).attempt, (t).error_message, (t).scheduled_for, (t).completed_at
      FROM calls WHERE label = 'retry'$$,
    $$VALUES ('pending'::text, 1, 1, 'HTTP 503'::text, now() + interval '10 seconds', NULL::timestamptz)$$,
    'A retryable failure with retries left should be pending again after backoff_base, with retry_count + 1');
SELECT results_eq(
    $$SELECT (t).worker_id, (t).claimed_at, (t).started_at, (t).last_heartbeat_at
      FROM calls WHERE label = 'retry'$$,
    $$VALUES (NULL::text, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz)$$,
    'A retried task should belong to nobody: worker_id, claimed_at, started_at, last_heartbeat_at cleared');
SELECT results_eq(
    $$SELECT status, retry_count, worker_id, error_message, scheduled_for
      FROM worker_tasks WHERE id = tests.fx('retry')$$,
    $$VALUES ('pending'::text, 1, NULL::text, 'HTTP 503'::text, now() + interval '10 seconds')$$,
    'fail_task should store the retry in the task row');
SELECT results_eq(
    $$SELECT attempt, worker_id, claimed_at, started_at, last_heartbeat_at, ended_at, outcome, error_message
      FROM worker_task_attempts WHERE task_id = tests.fx('retry')$$,
    $$VALUES (1, 'w-fail'::text, now(), now(), now() - interval '1 minute', now(), 'retried'::text, 'HTTP 503'::text)$$,
    'A retried failure should record its attempt: worker, times, outcome retried and the error');

SELECT results_eq(
    $$SELECT n, _retry_delay('test_backoff', n)
      FROM unnest(ARRAY[0, 1, 2, 3, 4, 5, 50, 100000, 2147483647]) AS n ORDER BY n$$,
    $$VALUES (0, interval '10 seconds'), (1, interval '20 seconds'), (2, interval '40 seconds'),
             (3, interval '80 seconds'), (4, interval '160 seconds'), (5, interval '5 minutes'),
             (50, interval '5 minutes'), (100000, interval '5 minutes'),
             (2147483647, interval '5 minutes')$$,
    '_retry_delay should double backoff_base per retry and stop at backoff_cap, without overflow');

/****************************************************************************/
-- fail_task: permanent failure

INSERT INTO tests.fx SELECT 'spent',
    (tests.make_claimed_task(worker_id := 'w-spent', role := 'test_life', max_retries := 0)).id;
SELECT results_eq(
    $$SELECT status, retry_count, error_message, completed_at
      FROM fail_task(tests.fx('spent'), 'w-spent', 1, tests.claim_token(tests.fx('spent'), 1), 'HTTP 500')$$,
    $$VALUES ('failed'::text, 0, 'HTTP 500'::text, now())$$,
    'A failure with no retry left (retry_count = max_retries) should fail the task, completed now');
SELECT results_eq(
    $$SELECT attempt, worker_id, outcome, error_message FROM worker_task_attempts WHERE task_id = tests.fx('spent')$$,
    $$VALUES (1, 'w-spent'::text, 'failed'::text, 'HTTP 500'::text)$$,
    'The final failure should record its attempt with outcome failed');

INSERT INTO tests.fx SELECT 'permanent', (tests.make_claimed_task(worker_id := 'w-perm', role := 'test_life')).id;
SELECT results_eq(
    $$SELECT status, retry_count, max_retries, error_message, completed_at
      FROM fail_task(tests.fx('permanent'), 'w-perm', 1, tests.claim_token(tests.fx('permanent'), 1), 'store closed', retryable := false)$$,
    $$VALUES ('failed'::text, 0, 3, 'store closed'::text, now())$$,
    'A failure with retryable := false should fail the task at once, even with retries left');
SELECT results_eq(
    $$SELECT attempt, worker_id, outcome, error_message FROM worker_task_attempts WHERE task_id = tests.fx('permanent')$$,
    $$VALUES (1, 'w-perm'::text, 'failed'::text, 'store closed'::text)$$,
    'A permanent failure should record its attempt with outcome failed');

/****************************************************************************/
-- fail_task: explicit retry_at

INSERT INTO tests.fx SELECT 'retry_at_future', (tests.make_claimed_task(worker_id := 'w-later', role := 'test_life')).id;
SELECT results_eq(
    $$SELECT status, retry_count, scheduled_for
      FROM fail_task(tests.fx('retry_at_future'), 'w-later', 1, tests.claim_token(tests.fx('retry_at_future'), 1), 'rate limited',
                     retry_at := now() + interval '2 hours')$$,
    $$VALUES ('pending'::text, 1, now() + interval '2 hours')$$,
    'fail_task should schedule the retry at an explicit retry_at in the future');

INSERT INTO tests.fx SELECT 'retry_at_past', (tests.make_claimed_task(worker_id := 'w-past', role := 'test_retry_past')).id;
SELECT results_eq(
    $$SELECT status, retry_count, scheduled_for
      FROM fail_task(tests.fx('retry_at_past'), 'w-past', 1, tests.claim_token(tests.fx('retry_at_past'), 1), 'flaky',
                     retry_at := now() - interval '1 hour')$$,
    $$VALUES ('pending'::text, 1, now())$$,
    'fail_task should clamp a retry_at in the past to now');

/****************************************************************************/
-- fail_task: bad arguments

INSERT INTO tests.fx SELECT 'null_error', (tests.make_claimed_task(worker_id := 'w-null', role := 'test_life')).id;
SELECT throws_ok(
    format('SELECT * FROM fail_task(%s, %L, 1, tests.claim_token(%1$s, 1), NULL)', tests.fx('null_error'), 'w-null'),
    '22004', 'error_message is required: say why the attempt failed',
    'fail_task should reject a NULL error_message');
SELECT results_eq(
    $$SELECT t.status, t.worker_id, t.retry_count, (SELECT count(*) FROM worker_task_attempts a WHERE a.task_id = t.id)
      FROM worker_tasks t WHERE t.id = tests.fx('null_error')$$,
    $$VALUES ('claimed'::text, 'w-null'::text, 0, 0::bigint)$$,
    'A rejected fail_task should change nothing');

/****************************************************************************/
-- snooze_task and release_task

INSERT INTO tests.fx SELECT 'snooze', (tests.make_claimed_task(worker_id := 'w-snooze', role := 'test_life')).id;
SELECT results_eq(
    $$SELECT status, scheduled_for, retry_count, worker_id, claimed_at, error_message
      FROM snooze_task(tests.fx('snooze'), 'w-snooze', 1, tests.claim_token(tests.fx('snooze'), 1), now() + interval '15 minutes')$$,
    $$VALUES ('pending'::text, now() + interval '15 minutes', 0, NULL::text, NULL::timestamptz, NULL::text)$$,
    'snooze_task should put the task back to pending at the given time without spending a retry');
SELECT results_eq(
    $$SELECT attempt, worker_id, outcome, error_message FROM worker_task_attempts WHERE task_id = tests.fx('snooze')$$,
    $$VALUES (1, 'w-snooze'::text, 'released'::text, NULL::text)$$,
    'A snooze should record its attempt with outcome released');

INSERT INTO tests.fx SELECT 'snooze_past', (tests.make_claimed_task(worker_id := 'w-snooze-2', role := 'test_snooze_past')).id;
SELECT results_eq(
    $$SELECT status, scheduled_for, retry_count
      FROM snooze_task(tests.fx('snooze_past'), 'w-snooze-2', 1, tests.claim_token(tests.fx('snooze_past'), 1), now() - interval '1 hour')$$,
    $$VALUES ('pending'::text, now(), 0)$$,
    'snooze_task should clamp a time in the past to now');

-- A task that already spent a retry, so that "unchanged" is not just zero.
INSERT INTO tests.fx SELECT 'release', (tests.make_claimed_task(worker_id := 'w-rel-1', role := 'test_release')).id;
SELECT results_eq(
    $$SELECT status, retry_count FROM fail_task(tests.fx('release'), 'w-rel-1', 1, tests.claim_token(tests.fx('release'), 1), 'timeout', retry_at := now())$$,
    $$VALUES ('pending'::text, 1)$$,
    'The release fixture should first spend one retry');
SELECT results_eq(
    $$SELECT id, attempt FROM claim_task('test_release', 'w-rel-2')$$,
    $$VALUES (tests.fx('release'), 2)$$,
    'The release fixture should be claimed again at attempt 2');
SELECT results_eq(
    $$SELECT status, scheduled_for, retry_count, worker_id, error_message
      FROM release_task(tests.fx('release'), 'w-rel-2', 2, tests.claim_token(tests.fx('release'), 2))$$,
    $$VALUES ('pending'::text, now(), 1, NULL::text, NULL::text)$$,
    'release_task should put the task back to pending, ready now, with retry_count unchanged');
SELECT results_eq(
    $$SELECT attempt, worker_id, outcome FROM worker_task_attempts WHERE task_id = tests.fx('release') ORDER BY attempt$$,
    $$VALUES (1, 'w-rel-1'::text, 'retried'::text), (2, 'w-rel-2'::text, 'released'::text)$$,
    'A release should record its attempt with outcome released');
SELECT results_eq(
    $$SELECT id, attempt, retry_count FROM claim_task('test_release', 'w-rel-3')$$,
    $$VALUES (tests.fx('release'), 3, 1)$$,
    'A released task should be claimable at once');

/****************************************************************************/
-- max_retries + 1 attempts, then failed

INSERT INTO tests.fx VALUES ('rounds', tests.make_task(role := 'test_rounds', max_retries := 2));

INSERT INTO calls (label, t) SELECT 'round_claim', c FROM claim_task('test_rounds', 'w-r1') AS c;
INSERT INTO calls (label, t) SELECT 'round_fail', f FROM fail_task(tests.fx('rounds'), 'w-r1', 1, tests.claim_token(tests.fx('rounds'), 1), 'e1') AS f;
UPDATE worker_tasks SET scheduled_for = now() WHERE id = tests.fx('rounds');

INSERT INTO calls (label, t) SELECT 'round_claim', c FROM claim_task('test_rounds', 'w-r2') AS c;
INSERT INTO calls (label, t) SELECT 'round_fail', f FROM fail_task(tests.fx('rounds'), 'w-r2', 2, tests.claim_token(tests.fx('rounds'), 2), 'e2') AS f;
UPDATE worker_tasks SET scheduled_for = now() WHERE id = tests.fx('rounds');

INSERT INTO calls (label, t) SELECT 'round_claim', c FROM claim_task('test_rounds', 'w-r3') AS c;
INSERT INTO calls (label, t) SELECT 'round_fail', f FROM fail_task(tests.fx('rounds'), 'w-r3', 3, tests.claim_token(tests.fx('rounds'), 3), 'e3') AS f;

SELECT results_eq(
    $$SELECT (t).id, (t).attempt, (t).worker_id, (t).retry_count FROM calls WHERE label = 'round_claim' ORDER BY n$$,
    $$VALUES (tests.fx('rounds'), 1, 'w-r1'::text, 0), (tests.fx('rounds'), 2, 'w-r2'::text, 1),
             (tests.fx('rounds'), 3, 'w-r3'::text, 2)$$,
    'A task with max_retries 2 should be claimed three times, one attempt each');
SELECT results_eq(
    $$SELECT (t).status, (t).retry_count, (t).scheduled_for, (t).completed_at, (t).error_message
      FROM calls WHERE label = 'round_fail' ORDER BY n$$,
    $$VALUES ('pending'::text, 1, now() + interval '10 seconds', NULL::timestamptz, 'e1'::text),
             ('pending'::text, 2, now() + interval '20 seconds', NULL::timestamptz, 'e2'::text),
             ('failed'::text,  2, now(),                         now(),              'e3'::text)$$,
    'The first two failures should retry with doubling backoff, and the third should fail the task');
SELECT results_eq(
    $$SELECT attempt, worker_id, outcome, error_message
      FROM worker_task_attempts WHERE task_id = tests.fx('rounds') ORDER BY attempt$$,
    $$VALUES (1, 'w-r1'::text, 'retried'::text, 'e1'::text), (2, 'w-r2'::text, 'retried'::text, 'e2'::text),
             (3, 'w-r3'::text, 'failed'::text, 'e3'::text)$$,
    'Each of the max_retries + 1 attempts should keep its worker, outcome and error');
SELECT is((SELECT count(*) FROM claim_task('test_rounds', 'w-r4')), 0::bigint,
    'A failed task should never be claimed again');

SELECT * FROM finish();
ROLLBACK;
