-- fencing: a worker that lost its task (recovered as stale, re-claimed by another worker or by
-- itself under a new attempt, cancelled, deleted) can act on it no more. Each refused call raises
-- and leaves the whole row as it was; heartbeat_task answers instead of raising.
BEGIN;
SELECT plan(94);

-- One role per section, so that each claim takes exactly the task its section means.
INSERT INTO task_roles (role, description) VALUES
    ('t05_stale',  'pgTAP fencing: recovered as stale'),
    ('t05_other',  'pgTAP fencing: re-claimed by another worker'),
    ('t05_same',   'pgTAP fencing: re-claimed by the same worker'),
    ('t05_cancel', 'pgTAP fencing: cancelled'),
    ('t05_gone',   'pgTAP fencing: deleted'),
    ('t05_null',   'pgTAP fencing: NULL arguments');

-- The five raising worker-side calls, as SQL templates of (task_id, worker_id, attempt).
CREATE TEMP TABLE worker_call (ord integer PRIMARY KEY, name text NOT NULL, template text NOT NULL);
INSERT INTO worker_call (ord, name, template) VALUES
    (1, 'complete_task', $$SELECT complete_task(%L, %L, %L, tests.claim_token(%1$L, %3$L), '{"n": 1}')$$),
    (2, 'fail_task',     $$SELECT fail_task(%L, %L, %L, tests.claim_token(%1$L, %3$L), 'boom')$$),
    (3, 'start_task',    $$SELECT start_task(%L, %L, %L, tests.claim_token(%1$L, %3$L))$$),
    (4, 'snooze_task',   $$SELECT snooze_task(%L, %L, %L, tests.claim_token(%1$L, %3$L), now() + interval '1 minute')$$),
    (5, 'release_task',  $$SELECT release_task(%L, %L, %L, tests.claim_token(%1$L, %3$L))$$);

-- Asserts that each worker call for (task_id, worker_id, attempt) raises errcode/errmsg and, when
-- check_row, that the task row is unchanged after each: 10 tests, or 5 without check_row.
CREATE FUNCTION pg_temp.refuses_every_call(
    task_id bigint, worker_id text, attempt integer, errcode text, errmsg text, why text,
    check_row boolean DEFAULT true)
RETURNS SETOF text
LANGUAGE plpgsql
AS $$
DECLARE
    v_before jsonb := tests.task_row(refuses_every_call.task_id);
    c        record;
BEGIN
    FOR c IN SELECT * FROM worker_call ORDER BY ord LOOP
        RETURN NEXT throws_ok(
            format(c.template, refuses_every_call.task_id, refuses_every_call.worker_id, refuses_every_call.attempt),
            refuses_every_call.errcode,
            refuses_every_call.errmsg,
            format('Should refuse %s by worker %s for attempt %s %s', c.name,
                   coalesce(refuses_every_call.worker_id, 'NULL'),
                   coalesce(refuses_every_call.attempt::text, 'NULL'), refuses_every_call.why));
        IF refuses_every_call.check_row THEN
            RETURN NEXT is(tests.task_row(refuses_every_call.task_id), v_before,
                format('Should leave the task row unchanged after the refused %s', c.name));
        END IF;
    END LOOP;
END;
$$;

-- The fence error of a lost attempt, word for word.
CREATE FUNCTION pg_temp.not_owned(task_id bigint, worker_id text, attempt integer)
RETURNS text
LANGUAGE sql
AS $$
    SELECT format('task %s attempt %s is not owned by worker %L', task_id, attempt, worker_id);
$$;

/****************************************************************************/
-- (a) Recovered as stale: the old owner is fenced out

SELECT id AS a_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't05_stale', started := true) \gset
SELECT tests.age_heartbeat(:a_id, interval '11 minutes') AS aged \gset

SELECT is(recover_stale_tasks(10), 1, 'Should recover the silent task as stale');
SELECT is((SELECT status FROM worker_tasks WHERE id = :a_id), 'pending',
    'Should put the stale task back to pending');

SELECT * FROM pg_temp.refuses_every_call(:a_id, 'w1', 1, '55000', pg_temp.not_owned(:a_id, 'w1', 1),
    'after the task was recovered as stale');

SELECT tests.task_row(:a_id) AS a_row \gset
SELECT is(heartbeat_task(:a_id, 'w1', 1, tests.claim_token(:a_id, 1)), 'lost',
    'Should answer lost to the heartbeat of the old owner of a recovered task');
SELECT is(tests.task_row(:a_id), :'a_row'::jsonb,
    'Should leave the recovered task row unchanged after a lost heartbeat');

/****************************************************************************/
-- (b) Re-claimed by another worker: the old owner is refused, the new one works

SELECT id AS b_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't05_other', started := true) \gset
SELECT tests.age_heartbeat(:b_id, interval '11 minutes') AS aged \gset
SELECT is(recover_stale_tasks(10), 1, 'Should recover the silent task of w1 as stale');

SELECT id AS b2_id, worker_id AS b2_worker, attempt AS b2_attempt FROM claim_task('t05_other', 'w2') \gset
SELECT is(ARRAY[:b2_id::text, :'b2_worker', :b2_attempt::text], ARRAY[:b_id::text, 'w2', '2'],
    'Should let w2 claim the recovered task as attempt 2');

SELECT * FROM pg_temp.refuses_every_call(:b_id, 'w1', 1, '55000', pg_temp.not_owned(:b_id, 'w1', 1),
    'after w2 re-claimed the task');

SELECT tests.task_row(:b_id) AS b_row \gset
SELECT is(heartbeat_task(:b_id, 'w1', 1, tests.claim_token(:b_id, 1)), 'lost',
    'Should answer lost to the heartbeat of the old owner after w2 re-claimed the task');
SELECT is(tests.task_row(:b_id), :'b_row'::jsonb,
    'Should leave the re-claimed task row unchanged after the old owner''s heartbeat');

SELECT throws_ok(
    format($$SELECT complete_task(%s, 'w1', 2, tests.claim_token(%1$s, 2))$$, :b_id),
    '55000', pg_temp.not_owned(:b_id, 'w1', 2),
    'Should refuse the old owner even when it names the current attempt');

SELECT is(heartbeat_task(:b_id, 'w2', 2, tests.claim_token(:b_id, 2)), 'continue', 'Should answer continue to the new owner''s heartbeat');
SELECT is((SELECT status FROM start_task(:b_id, 'w2', 2, tests.claim_token(:b_id, 2))), 'running', 'Should let the new owner start the task');
SELECT is((SELECT status || ' ' || result::text FROM complete_task(:b_id, 'w2', 2, tests.claim_token(:b_id, 2), '{"by": "w2"}')),
    'completed {"by": "w2"}',
    'Should let the new owner complete the task with its result');

/****************************************************************************/
-- (c) Re-claimed by the same worker id: the fence is the attempt, not the name

SELECT id AS c_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't05_same', started := true) \gset
SELECT tests.age_heartbeat(:c_id, interval '11 minutes') AS aged \gset
SELECT is(recover_stale_tasks(10), 1, 'Should recover the silent task of w1 as stale');

SELECT id AS c2_id, worker_id AS c2_worker, attempt AS c2_attempt FROM claim_task('t05_same', 'w1') \gset
SELECT is(ARRAY[:c2_id::text, :'c2_worker', :c2_attempt::text], ARRAY[:c_id::text, 'w1', '2'],
    'Should let w1 claim the recovered task again as attempt 2');

SELECT * FROM pg_temp.refuses_every_call(:c_id, 'w1', 1, '55000', pg_temp.not_owned(:c_id, 'w1', 1),
    'after w1 re-claimed the task as attempt 2');

SELECT tests.task_row(:c_id) AS c_row \gset
SELECT is(heartbeat_task(:c_id, 'w1', 1, tests.claim_token(:c_id, 1)), 'lost',
    'Should answer lost to a heartbeat for attempt 1 once the same worker holds attempt 2');
SELECT is(tests.task_row(:c_id), :'c_row'::jsonb,
    'Should leave the task row unchanged after the heartbeat for attempt 1');

SELECT is(heartbeat_task(:c_id, 'w1', 2, tests.claim_token(:c_id, 2)), 'continue', 'Should answer continue to the heartbeat for attempt 2');
SELECT is((SELECT status FROM start_task(:c_id, 'w1', 2, tests.claim_token(:c_id, 2))), 'running', 'Should start the task for attempt 2');
SELECT is((SELECT status FROM complete_task(:c_id, 'w1', 2, tests.claim_token(:c_id, 2), '{"attempt": 2}')), 'completed',
    'Should complete the task for attempt 2');
SELECT throws_ok(
    format($$SELECT complete_task(%s, 'w1', 1, tests.claim_token(%1$s, 1))$$, :c_id),
    '55000', pg_temp.not_owned(:c_id, 'w1', 1),
    'Should refuse to complete attempt 1 after attempt 2 completed the task');

/****************************************************************************/
-- (d) Cancelled

-- A pending task cancelled after its worker released it: that worker is refused.
SELECT r.id AS d1_id
FROM tests.make_claimed_task(worker_id := 'w1', role := 't05_cancel') AS m,
     release_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS r \gset
SELECT is((SELECT status FROM cancel_task(:d1_id)), 'cancelled', 'Should cancel the pending task at once');

SELECT * FROM pg_temp.refuses_every_call(:d1_id, 'w1', 1, '55000', pg_temp.not_owned(:d1_id, 'w1', 1),
    'after the task was cancelled while pending');

SELECT tests.task_row(:d1_id) AS d1_row \gset
SELECT is(heartbeat_task(:d1_id, 'w1', 1, tests.claim_token(:d1_id, 1)), 'lost', 'Should answer lost to a heartbeat for a cancelled task');
SELECT is(tests.task_row(:d1_id), :'d1_row'::jsonb,
    'Should leave the cancelled task row unchanged after the heartbeat');
SELECT is((SELECT count(*) FROM claim_task('t05_cancel', 'w2')), 0::bigint,
    'Should never hand out a cancelled task');

-- A running task cancelled: the worker hears it, and its fail_task ends the task cancelled.
SELECT id AS d2_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't05_cancel', started := true) \gset
SELECT is((SELECT jsonb_build_object('status', status, 'cancel_requested_at', cancel_requested_at)
           FROM cancel_task(:d2_id)),
    jsonb_build_object('status', 'running', 'cancel_requested_at', now()),
    'Should leave a running task running with cancel_requested_at set');
SELECT is(heartbeat_task(:d2_id, 'w1', 1, tests.claim_token(:d2_id, 1)), 'cancel_requested',
    'Should answer cancel_requested to the heartbeat of a task whose cancel was requested');
SELECT is(
    (SELECT jsonb_build_object('status', status, 'retry_count', retry_count, 'completed_at', completed_at,
                               'error_message', error_message)
     FROM fail_task(:d2_id, 'w1', 1, tests.claim_token(:d2_id, 1), 'stopped on cancel')),
    jsonb_build_object('status', 'cancelled', 'retry_count', 0, 'completed_at', now(),
                       'error_message', 'stopped on cancel'),
    'Should end the task cancelled on fail_task, not pending, without spending a retry');
SELECT results_eq(
    format('SELECT attempt, worker_id, outcome, error_message FROM worker_task_attempts WHERE task_id = %s', :d2_id),
    $$VALUES (1, 'w1'::text, 'cancelled'::text, 'stopped on cancel'::text)$$,
    'Should record the attempt as cancelled');
SELECT is(heartbeat_task(:d2_id, 'w1', 1, tests.claim_token(:d2_id, 1)), 'lost', 'Should answer lost to a heartbeat once the task is cancelled');
SELECT throws_ok(
    format($$SELECT complete_task(%s, 'w1', 1, tests.claim_token(%1$s, 1))$$, :d2_id),
    '55000', pg_temp.not_owned(:d2_id, 'w1', 1),
    'Should refuse to complete a task that ended cancelled');

-- A running task cancelled, then completed anyway: the completion stands.
SELECT id AS d3_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't05_cancel', started := true) \gset
SELECT cancel_requested_at AS d3_cancel_requested_at FROM cancel_task(:d3_id) \gset
SELECT is((SELECT status || ' ' || result::text FROM complete_task(:d3_id, 'w1', 1, tests.claim_token(:d3_id, 1), '{"late": true}')),
    'completed {"late": true}',
    'Should complete a task whose cancel was requested when the worker completes it');
SELECT is((SELECT count(*) FROM worker_task_attempts WHERE task_id = :d3_id), 0::bigint,
    'Should record no ended attempt for the completed task');

/****************************************************************************/
-- (e) A task that does not exist

SELECT id AS e_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't05_gone') \gset
DELETE FROM worker_tasks WHERE id = :e_id;

SELECT * FROM pg_temp.refuses_every_call(:e_id, 'w1', 1, 'P0002', format('task %s does not exist', :e_id),
    'for a task that does not exist', check_row := false);
SELECT is(heartbeat_task(:e_id, 'w1', 1, tests.claim_token(:e_id, 1)), 'not_found', 'Should answer not_found to a heartbeat for a missing task');

/****************************************************************************/
-- (f) NULL arguments

SELECT id AS f_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't05_null') \gset
SELECT tests.task_row(:f_id) AS f_row \gset

SELECT * FROM pg_temp.refuses_every_call(:f_id, NULL, 1, '22004', 'task_id, worker_id, attempt and claim_token are all required',
    'with a NULL worker_id', check_row := false);
SELECT * FROM pg_temp.refuses_every_call(:f_id, 'w1', NULL, '22004', 'task_id, worker_id, attempt and claim_token are all required',
    'with a NULL attempt', check_row := false);
SELECT throws_ok(
    $$SELECT complete_task(NULL, 'w1', 1, tests.claim_token(NULL, 1))$$,
    '22004', 'task_id, worker_id, attempt and claim_token are all required',
    'Should refuse complete_task with a NULL task_id');
SELECT throws_ok(format('SELECT heartbeat_task(%s, NULL, 1, tests.claim_token(%1$s, 1))', :f_id), '22004',
    'task_id, worker_id, attempt and claim_token are all required', 'Should refuse a heartbeat with a NULL worker_id');
SELECT throws_ok(format('SELECT heartbeat_task(%s, ''w1'', NULL, tests.claim_token(%1$s, NULL))', :f_id), '22004',
    'task_id, worker_id, attempt and claim_token are all required', 'Should refuse a heartbeat with a NULL attempt');
SELECT throws_ok($$SELECT heartbeat_task(NULL, 'w1', 1, tests.claim_token(NULL, 1))$$, '22004',
    'task_id, worker_id, attempt and claim_token are all required', 'Should refuse a heartbeat with a NULL task_id');
SELECT is(tests.task_row(:f_id), :'f_row'::jsonb, 'Should leave the task row unchanged after the NULL calls');
SELECT is(heartbeat_task(:f_id, 'w1', 1, tests.claim_token(:f_id, 1)), 'continue', 'Should still answer continue to the owner');

SELECT * FROM finish();
ROLLBACK;
