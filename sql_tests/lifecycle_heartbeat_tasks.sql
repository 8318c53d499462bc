-- lifecycle_heartbeat_tasks: heartbeat_tasks keeps every task a worker holds alive in one call and
-- answers for each what heartbeat_task answers for it (continue, cancel_requested, lost,
-- not_found), fenced as heartbeat_task fences: only the worker's own claimed or running attempt
-- is touched. Bad input is refused and changes nothing; a login granted only taskpool_worker
-- calls it.
BEGIN;
SELECT plan(34);

-- One role per task, so that each make_claimed_task takes exactly the task it means.
INSERT INTO task_roles (role, description) VALUES
    ('t36_claimed', 'pgTAP lifecycle_heartbeat_tasks: claimed, not started'),
    ('t36_running', 'pgTAP lifecycle_heartbeat_tasks: running'),
    ('t36_cancel',  'pgTAP lifecycle_heartbeat_tasks: cancel requested'),
    ('t36_other',   'pgTAP lifecycle_heartbeat_tasks: recovered and re-claimed by another worker'),
    ('t36_again',   'pgTAP lifecycle_heartbeat_tasks: recovered and re-claimed by the same worker'),
    ('t36_done',    'pgTAP lifecycle_heartbeat_tasks: completed'),
    ('t36_priv',    'pgTAP lifecycle_heartbeat_tasks: as a worker login');

-- A login granted only taskpool_worker, as the least-privilege deployment makes it, and a role
-- with no grants (what PUBLIC may do).
CREATE ROLE t36_worker_login LOGIN IN ROLE taskpool_worker;
CREATE ROLE t36_nobody NOLOGIN;

/****************************************************************************/
-- Structure and grants

SELECT has_function('public', 'heartbeat_tasks', ARRAY['text', 'bigint[]', 'integer[]', 'uuid[]'],
    'Should have heartbeat_tasks(worker_id, task_ids, attempts, claim_tokens)');
SELECT is(pg_get_function_arguments('heartbeat_tasks(text, bigint[], integer[], uuid[])'::regprocedure),
    'worker_id text, task_ids bigint[], attempts integer[], claim_tokens uuid[]',
    'heartbeat_tasks should take worker_id, task_ids, attempts and claim_tokens');
SELECT is(pg_get_function_result('heartbeat_tasks(text, bigint[], integer[], uuid[])'::regprocedure),
    'TABLE(task_id bigint, answer text)',
    'heartbeat_tasks should return (task_id, answer) rows');
SELECT is_definer('public', 'heartbeat_tasks', ARRAY['text', 'bigint[]', 'integer[]', 'uuid[]'],
    'heartbeat_tasks should be SECURITY DEFINER');
SELECT is((SELECT c FROM pg_proc p, unnest(p.proconfig) AS c
           WHERE p.oid = 'heartbeat_tasks(text, bigint[], integer[], uuid[])'::regprocedure AND c LIKE 'search_path=%'),
    'search_path=public, pg_temp', 'heartbeat_tasks should pin search_path to public, pg_temp');
SELECT function_privs_are('public', 'heartbeat_tasks', ARRAY['text', 'bigint[]', 'integer[]', 'uuid[]'], 'taskpool_worker',
    ARRAY['EXECUTE'], 'Should let taskpool_worker execute heartbeat_tasks');
SELECT ok(NOT has_function_privilege('t36_nobody', 'heartbeat_tasks(text, bigint[], integer[], uuid[])', 'EXECUTE'),
    'Should not let PUBLIC execute heartbeat_tasks');

/****************************************************************************/
-- One answer per task, in the order given

-- w36 holds: a claimed task, a running one, one an operator asked to cancel. It held: one
-- recovered and re-claimed by w36-other, one recovered and re-claimed by w36 itself (attempt 2),
-- one it completed. And one task id was never there.
INSERT INTO tests.fx SELECT 'claimed', t.id, t.attempt FROM tests.make_claimed_task('w36', 't36_claimed') t;
INSERT INTO tests.fx SELECT 'running', t.id, t.attempt FROM tests.make_claimed_task('w36', 't36_running', started := true) t;
INSERT INTO tests.fx SELECT 'cancel',  t.id, t.attempt FROM tests.make_claimed_task('w36', 't36_cancel', started := true) t;
INSERT INTO tests.fx SELECT 'other',   t.id, t.attempt FROM tests.make_claimed_task('w36', 't36_other', started := true) t;
INSERT INTO tests.fx SELECT 'again',   t.id, t.attempt FROM tests.make_claimed_task('w36', 't36_again', started := true) t;
INSERT INTO tests.fx SELECT 'done',    t.id, t.attempt FROM tests.make_claimed_task('w36', 't36_done', started := true) t;
INSERT INTO tests.fx SELECT 'gone', max(id) + 1000000, 1 FROM worker_tasks;

SELECT cancel_requested_at IS NOT NULL AS requested FROM cancel_task(tests.fx('cancel')) \gset
SELECT tests.age_heartbeat(tests.fx('other'), interval '11 minutes') AS aged \gset
SELECT tests.age_heartbeat(tests.fx('again'), interval '11 minutes') AS aged \gset
SELECT is(recover_stale_tasks(10), 2, 'Should recover the two silent tasks as stale');
SELECT is((SELECT (t).attempt FROM (SELECT claim_task('t36_other', 'w36-other') AS t) c), 2,
    'w36-other should re-claim one at attempt 2');
SELECT is((SELECT (t).attempt FROM (SELECT claim_task('t36_again', 'w36') AS t) c), 2,
    'w36 should re-claim the other at attempt 2');
SELECT is((complete_task(tests.fx('done'), 'w36', 1, tests.claim_token(tests.fx('done'), 1))).status, 'completed', 'w36 should complete one task');
-- The live attempts' heartbeats a minute old: a heartbeat is seen to move them.
SELECT tests.age_heartbeat(f.id, interval '1 minute') FROM tests.fx f
WHERE f.name IN ('claimed', 'running', 'cancel', 'other', 'again');
SELECT tests.snapshot_all();

-- On taskpool's clock, which an offset tells from now().
SELECT set_taskpool_clock_offset('3 minutes') AS shifted \gset
CREATE TEMP TABLE batch AS
SELECT * FROM heartbeat_tasks('w36',
    ARRAY(SELECT tests.fx(n) FROM unnest(ARRAY['gone', 'done', 'again', 'other', 'cancel', 'running', 'claimed']) AS n),
    ARRAY[1, 1, 1, 1, 1, 1, 1], tests.claim_tokens(ARRAY(SELECT tests.fx(n) FROM unnest(ARRAY['gone', 'done', 'again', 'other', 'cancel', 'running', 'claimed']) AS n), ARRAY[1, 1, 1, 1, 1, 1, 1]));
SELECT set_taskpool_clock_offset('0') AS shifted \gset

SELECT results_eq(
    $$SELECT task_id, answer FROM batch$$,
    $$SELECT tests.fx(e.name), e.answer
      FROM (VALUES ('gone', 'not_found', 1), ('done', 'lost', 2), ('again', 'lost', 3), ('other', 'lost', 4),
                   ('cancel', 'cancel_requested', 5), ('running', 'continue', 6), ('claimed', 'continue', 7))
           AS e(name, answer, pos)
      ORDER BY e.pos$$,
    'Should answer each task in the order given: not_found, lost (completed, a later attempt, another worker), cancel_requested, continue');
SELECT is(tests.changed(), ARRAY['cancel', 'claimed', 'running'],
    'Should change only the rows of the attempts the worker holds');
SELECT results_eq(
    $$SELECT last_heartbeat_at FROM worker_tasks WHERE id IN (tests.fx('cancel'), tests.fx('claimed'), tests.fx('running'))$$,
    $$VALUES (now() + interval '3 minutes'), (now() + interval '3 minutes'), (now() + interval '3 minutes')$$,
    'Should set their last_heartbeat_at to taskpool_now()');
SELECT is((SELECT to_jsonb(t) - 'last_heartbeat_at' - 'updated_at' FROM worker_tasks t WHERE t.id = tests.fx('running')),
    (SELECT s.row_before - 'last_heartbeat_at' - 'updated_at' FROM tests.snapshots s WHERE s.name = 'running'),
    'Should change nothing of a heartbeated row but its heartbeat (and updated_at)');

-- The same answers as heartbeat_task gives for each, one by one.
SELECT results_eq(
    $$SELECT answer FROM heartbeat_tasks('w36', ARRAY(SELECT id FROM tests.fx ORDER BY name), ARRAY(SELECT attempt FROM tests.fx ORDER BY name), tests.claim_tokens(ARRAY(SELECT id FROM tests.fx ORDER BY name), ARRAY(SELECT attempt FROM tests.fx ORDER BY name)))$$,
    $$SELECT heartbeat_task(id, 'w36', attempt, tests.claim_token(id, attempt)) FROM tests.fx ORDER BY name$$,
    'Should answer for each task what heartbeat_task answers for it');

/****************************************************************************/
-- Fencing: the right attempt of the right worker, nothing else

SELECT tests.snapshot_all();
SELECT results_eq(
    $$SELECT answer FROM heartbeat_tasks('w36-thief', ARRAY[tests.fx('running'), tests.fx('claimed')], ARRAY[1, 1], tests.claim_tokens(ARRAY[tests.fx('running'), tests.fx('claimed')], ARRAY[1, 1]))$$,
    $$VALUES ('lost'::text), ('lost')$$,
    'Should answer lost to another worker heartbeating tasks it does not hold');
SELECT results_eq(
    $$SELECT answer FROM heartbeat_tasks('w36', ARRAY[tests.fx('running'), tests.fx('again')], ARRAY[2, 1], tests.claim_tokens(ARRAY[tests.fx('running'), tests.fx('again')], ARRAY[2, 1]))$$,
    $$VALUES ('lost'::text), ('lost')$$,
    'Should answer lost to the worker heartbeating another attempt than the one it holds');
SELECT is(tests.changed(), '{}'::text[], 'Should leave every row unchanged for lost heartbeats');
SELECT results_eq(
    $$SELECT answer FROM heartbeat_tasks('w36-other', ARRAY[tests.fx('other')], ARRAY[2], tests.claim_tokens(ARRAY[tests.fx('other')], ARRAY[2]))$$,
    $$VALUES ('continue'::text)$$,
    'Should answer continue to the new owner''s heartbeat');
SELECT is_empty($$SELECT * FROM heartbeat_tasks('w36', '{}', '{}', tests.claim_tokens('{}', '{}'))$$, 'Should answer no rows for no tasks');

/****************************************************************************/
-- Bad input: refused, nothing changed

SELECT tests.snapshot_all();
SELECT throws_ok(
    format($$SELECT * FROM heartbeat_tasks(NULL, ARRAY[%s], ARRAY[1], tests.claim_tokens(ARRAY[%1$s], ARRAY[1]))$$, tests.fx('running')),
    '22004', 'worker_id, task_ids, attempts and claim_tokens are all required, and no task id, attempt or claim_token may be NULL',
    'Should refuse a NULL worker_id');
SELECT throws_ok($$SELECT * FROM heartbeat_tasks('w36', NULL, ARRAY[1], tests.claim_tokens(NULL, ARRAY[1]))$$,
    '22004', NULL, 'Should refuse NULL task_ids');
SELECT throws_ok(format($$SELECT * FROM heartbeat_tasks('w36', ARRAY[%s], NULL, tests.claim_tokens(ARRAY[%1$s], NULL))$$, tests.fx('running')),
    '22004', NULL, 'Should refuse NULL attempts');
SELECT throws_ok(format($$SELECT * FROM heartbeat_tasks('w36', ARRAY[%s, NULL], ARRAY[1, 1], tests.claim_tokens(ARRAY[%1$s, NULL], ARRAY[1, 1]))$$, tests.fx('running')),
    '22004', NULL, 'Should refuse a NULL task id');
SELECT throws_ok(format($$SELECT * FROM heartbeat_tasks('w36', ARRAY[%s, %s], ARRAY[1, NULL], tests.claim_tokens(ARRAY[%1$s, %2$s], ARRAY[1, NULL]))$$,
                        tests.fx('running'), tests.fx('claimed')),
    '22004', NULL, 'Should refuse a NULL attempt');
SELECT throws_ok(format($$SELECT * FROM heartbeat_tasks('w36', ARRAY[%s, %s], ARRAY[1], ARRAY[gen_random_uuid(), gen_random_uuid()])$$,
                        tests.fx('running'), tests.fx('claimed')),
    '22023', 'task_ids, attempts and claim_tokens must be one-dimensional arrays of the same length, not 2, 1 and 2',
    'Should refuse arrays of different lengths');
SELECT throws_ok(format($$SELECT * FROM heartbeat_tasks('w36', ARRAY[[%s, %s]], ARRAY[[1, 1]], tests.claim_tokens(ARRAY[[%1$s, %2$s]], ARRAY[[1, 1]]))$$,
                        tests.fx('running'), tests.fx('claimed')),
    '22023', NULL, 'Should refuse two-dimensional arrays');
SELECT throws_ok(format($$SELECT * FROM heartbeat_tasks('w36', ARRAY[%s, %s, %s], ARRAY[1, 1, 1], tests.claim_tokens(ARRAY[%1$s, %2$s, %3$s], ARRAY[1, 1, 1]))$$,
                        tests.fx('running'), tests.fx('claimed'), tests.fx('running')),
    '22023', format('task_ids repeats task %s', tests.fx('running')),
    'Should refuse a task given twice');
SELECT throws_ok(
    format($$SELECT * FROM heartbeat_tasks('w36', ARRAY[%s] || ARRAY(SELECT -g::bigint FROM generate_series(1, 1000) g),
                                           array_fill(1, ARRAY[1001]), tests.claim_tokens(ARRAY[%1$s] || ARRAY(SELECT -g::bigint FROM generate_series(1, 1000) g), array_fill(1, ARRAY[1001])))$$, tests.fx('running')),
    '22023', 'task_ids has 1001 entries; at most 1000 go in one call',
    'Should refuse more than 1000 tasks');
SELECT is(tests.changed(), '{}'::text[], 'Should leave every row unchanged after the refused calls');
SELECT is((SELECT count(*) FROM heartbeat_tasks('w36', ARRAY(SELECT -g::bigint FROM generate_series(1, 1000) g),
                                                array_fill(1, ARRAY[1000]), tests.claim_tokens(ARRAY(SELECT -g::bigint FROM generate_series(1, 1000) g), array_fill(1, ARRAY[1000])))),
    1000::bigint, 'Should take 1000 tasks in one call');

/****************************************************************************/
-- A worker login granted only taskpool_worker

SELECT id AS priv_id, attempt AS priv_attempt FROM tests.make_claimed_task('w36-priv', 't36_priv', started := true) \gset
SET ROLE t36_worker_login;
SELECT results_eq(
    format($$SELECT task_id, answer FROM heartbeat_tasks('w36-priv', ARRAY[%s], ARRAY[%s], tests.claim_tokens(ARRAY[%1$s], ARRAY[%2$s]))$$, :priv_id, :priv_attempt),
    format($$VALUES (%s::bigint, 'continue'::text)$$, :priv_id),
    'Should let a login granted only taskpool_worker heartbeat its tasks');
RESET ROLE;
SET ROLE t36_nobody;
SELECT throws_ok(format($$SELECT * FROM heartbeat_tasks('w36-priv', ARRAY[%s], ARRAY[1], ARRAY[gen_random_uuid()])$$, :priv_id),
    '42501', 'permission denied for function heartbeat_tasks', 'Should refuse a role without taskpool_worker');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
