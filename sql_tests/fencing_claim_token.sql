-- fencing_claim_token: every claim gets a random claim_token, and every worker call on a claimed task
-- passes it with the attempt. A call with the right attempt and another token is refused as a
-- lost claim and changes nothing; so is a call from a claim the database forgot (lost WAL after
-- a failover), which a new claim took again under the same attempt number.
BEGIN;
SELECT plan(36);

/****************************************************************************/
-- Structure

SELECT col_type_is('worker_tasks', 'claim_token', 'uuid', 'Should keep the claim_token on the task');
SELECT col_type_is('worker_task_attempts', 'claim_token', 'uuid', 'Should keep the claim_token on each attempt');
SELECT ok(NOT EXISTS (SELECT FROM pg_catalog.pg_index i
                      JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
                      WHERE i.indrelid = 'worker_tasks'::regclass AND a.attname = 'claim_token'),
    'Should index no claim_token: an indexed column would cost the claim and the completion their HOT updates');

/****************************************************************************/
-- Each claim its own token

INSERT INTO tests.fx (name, id, attempt)
SELECT 'wrong', t.id, t.attempt FROM tests.make_claimed_task(worker_id := 'w66', started := true) t;

SELECT isnt((SELECT claim_token FROM worker_tasks WHERE id = tests.fx('wrong')), NULL,
    'Should give a claimed task a claim_token');
SELECT tests.make_task(role := 'analytics_refresh') FROM generate_series(1, 3);
SELECT is((SELECT count(DISTINCT c.claim_token)::int FROM claim_and_start_tasks('analytics_refresh', 'w66-batch', 3) c),
    3, 'Should give each task of a batch claim a token of its own');

/****************************************************************************/
-- The right attempt with another token: refused, nothing changed

SELECT tests.snapshot('wrong');
SELECT is(heartbeat_task(tests.fx('wrong'), 'w66', 1, gen_random_uuid()), 'lost',
    'Should answer lost to a heartbeat with the right attempt and another token');
SELECT is((SELECT answer FROM heartbeat_tasks('w66', ARRAY[tests.fx('wrong')], ARRAY[1], ARRAY[gen_random_uuid()])),
    'lost', 'Should answer lost to a batched heartbeat with the right attempt and another token');
SELECT throws_ok(format($$SELECT complete_task(%s, 'w66', 1, gen_random_uuid(), '{"n": 1}')$$, tests.fx('wrong')),
    '55000', format('task %s attempt 1 is not owned by worker ''w66''', tests.fx('wrong')),
    'Should refuse complete_task with the right attempt and another token');
SELECT throws_ok(format($$SELECT fail_task(%s, 'w66', 1, gen_random_uuid(), 'boom')$$, tests.fx('wrong')),
    '55000', NULL, 'Should refuse fail_task with the right attempt and another token');
SELECT throws_ok(format($$SELECT snooze_task(%s, 'w66', 1, gen_random_uuid(), now() + interval '1 minute')$$, tests.fx('wrong')),
    '55000', NULL, 'Should refuse snooze_task with the right attempt and another token');
SELECT throws_ok(format($$SELECT release_task(%s, 'w66', 1, gen_random_uuid())$$, tests.fx('wrong')),
    '55000', NULL, 'Should refuse release_task with the right attempt and another token');
SELECT is((SELECT status FROM complete_tasks('w66', jsonb_build_array(jsonb_build_object(
               'task_id', tests.fx('wrong'), 'attempt', 1, 'claim_token', gen_random_uuid())))),
    'lost', 'Should answer lost to complete_tasks with the right attempt and another token');
SELECT ok(tests.unchanged('wrong'), 'Should leave the task as it was after every refused call');

INSERT INTO tests.fx (name, id, attempt)
SELECT 'unstarted', t.id, t.attempt FROM tests.make_claimed_task(worker_id := 'w66') t;
SELECT tests.snapshot('unstarted');
SELECT throws_ok(format($$SELECT start_task(%s, 'w66', 1, gen_random_uuid())$$, tests.fx('unstarted')),
    '55000', NULL, 'Should refuse start_task with the right attempt and another token');
SELECT ok(tests.unchanged('unstarted'), 'Should leave the claimed task as it was after the refused start');

/****************************************************************************/
-- A claim the database forgot: the task back as it was before the claim, claimed again

INSERT INTO tests.fx (name, id, attempt)
SELECT 'forgotten', t.id, t.attempt FROM tests.make_claimed_task(worker_id := 'w66-lost', started := true) t;
SELECT tests.claim_token(tests.fx('forgotten'), 1) AS forgotten_token \gset

-- What a replica promoted before the claim's WAL reached it holds: the pending row of before the
-- claim, attempt 0, and no history of the claim. Written past the triggers, as WAL replay writes.
SET LOCAL session_replication_role = replica;
UPDATE worker_tasks
SET status = 'pending', attempt = 0, worker_id = NULL, claim_token = NULL, claimed_at = NULL,
    started_at = NULL, last_heartbeat_at = NULL
WHERE id = tests.fx('forgotten');
SET LOCAL session_replication_role = origin;

SELECT is((SELECT c.attempt FROM claim_and_start_tasks('store_discovery', 'w66-lost') c WHERE c.id = tests.fx('forgotten')),
    1, 'Should claim the task again under the same attempt number, by the same worker');
SELECT isnt((SELECT claim_token FROM worker_tasks WHERE id = tests.fx('forgotten')), :'forgotten_token'::uuid,
    'Should give the new claim a token the forgotten claim did not have');
SELECT tests.snapshot('forgotten');
SELECT is(heartbeat_task(tests.fx('forgotten'), 'w66-lost', 1, :'forgotten_token'), 'lost',
    'Should answer lost to the forgotten claim''s heartbeat');
SELECT throws_ok(format($$SELECT complete_task(%s, 'w66-lost', 1, %L, '{"from": "the forgotten claim"}')$$,
                        tests.fx('forgotten'), :'forgotten_token'),
    '55000', NULL, 'Should refuse the forgotten claim''s completion');
SELECT is((SELECT status FROM complete_tasks('w66-lost', jsonb_build_array(jsonb_build_object(
               'task_id', tests.fx('forgotten'), 'attempt', 1, 'claim_token', :'forgotten_token',
               'result', '{"from": "the forgotten claim"}'::jsonb)))),
    'lost', 'Should answer lost to the forgotten claim''s batched completion');
SELECT throws_ok(format($$SELECT fail_task(%s, 'w66-lost', 1, %L, 'boom')$$, tests.fx('forgotten'), :'forgotten_token'),
    '55000', NULL, 'Should refuse the forgotten claim''s failure');
SELECT ok(tests.unchanged('forgotten'), 'Should leave the new claim as it was after the forgotten claim''s calls');
SELECT is((SELECT status || ' ' || result::text FROM complete_task(tests.fx('forgotten'), 'w66-lost', 1,
                                                                    tests.claim_token(tests.fx('forgotten'), 1),
                                                                    '{"from": "the new claim"}')),
    'completed {"from": "the new claim"}', 'Should complete the task by its new claim');
SELECT throws_ok(format($$SELECT complete_task(%s, 'w66-lost', 1, %L)$$, tests.fx('forgotten'), :'forgotten_token'),
    '55000', NULL,
    'Should refuse the forgotten claim''s completion after the new claim completed: it is no repeat of it');
SELECT is((SELECT status FROM complete_tasks('w66-lost', jsonb_build_array(jsonb_build_object(
               'task_id', tests.fx('forgotten'), 'attempt', 1, 'claim_token', :'forgotten_token')))),
    'lost', 'Should answer lost, not completed, to the forgotten claim''s batched completion after the new one');
SELECT is((SELECT status FROM complete_task(tests.fx('forgotten'), 'w66-lost', 1,
                                            tests.claim_token(tests.fx('forgotten'), 1))),
    'completed', 'Should still answer a repeat of the new claim''s own completion with the task');

/****************************************************************************/
-- The token goes with the attempt's history, and leaves the task with its worker

INSERT INTO tests.fx (name, id, attempt)
SELECT 'history', t.id, t.attempt FROM tests.make_claimed_task(worker_id := 'w66', started := true) t;
SELECT tests.claim_token(tests.fx('history'), 1) AS history_token \gset
SELECT is((SELECT status FROM fail_task(tests.fx('history'), 'w66', 1, :'history_token', 'boom')), 'pending',
    'Should retry a failed attempt (a fixture check)');
SELECT is((SELECT claim_token FROM worker_task_attempts WHERE task_id = tests.fx('history') AND attempt = 1),
    :'history_token'::uuid, 'Should keep the attempt''s claim_token in its history');
SELECT is((SELECT claim_token FROM worker_tasks WHERE id = tests.fx('history')), NULL,
    'Should clear the claim_token of a task back in the pool');

/****************************************************************************/
-- Bad input: a clear error, nothing changed

SELECT tests.snapshot('unstarted');
SELECT throws_ok(format($$SELECT complete_task(%s, 'w66', 1, NULL)$$, tests.fx('unstarted')),
    '22004', 'task_id, worker_id, attempt and claim_token are all required',
    'Should refuse a completion without a claim_token, naming it');
SELECT throws_ok(format($$SELECT heartbeat_task(%s, 'w66', 1, NULL)$$, tests.fx('unstarted')),
    '22004', 'task_id, worker_id, attempt and claim_token are all required',
    'Should refuse a heartbeat without a claim_token, naming it');
SELECT throws_ok(format($$SELECT * FROM heartbeat_tasks('w66', ARRAY[%s], ARRAY[1], NULL)$$, tests.fx('unstarted')),
    '22004', NULL, 'Should refuse a batched heartbeat without claim_tokens');
SELECT throws_ok(format($$SELECT * FROM heartbeat_tasks('w66', ARRAY[%s], ARRAY[1], '{}')$$, tests.fx('unstarted')),
    '22023', 'task_ids, attempts and claim_tokens must be one-dimensional arrays of the same length, not 1, 1 and 0',
    'Should refuse a batched heartbeat with a claim_token missing');
SELECT throws_ok(format($$SELECT * FROM complete_tasks('w66', '[{"task_id": %s, "attempt": 1}]')$$, tests.fx('unstarted')),
    '22023', 'completions[0] needs the claim_token of its claim (a UUID string)',
    'Should refuse a batched completion without a claim_token, naming the entry');
SELECT throws_ok(format($$SELECT * FROM complete_tasks('w66', '[{"task_id": %s, "attempt": 1, "claim_token": "w66"}]')$$,
                        tests.fx('unstarted')),
    '22023', 'completions[0] needs the claim_token of its claim (a UUID string)',
    'Should refuse a batched completion whose claim_token is no UUID, naming the entry');
SELECT ok(tests.unchanged('unstarted'), 'Should leave the task as it was after the bad calls');

SELECT * FROM finish();
ROLLBACK;
