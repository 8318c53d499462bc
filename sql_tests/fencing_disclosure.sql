-- A refused worker call tells a caller who does not own the task nothing about who does (issue
-- 11, item 13): the owner's worker_id and attempt are what it takes to act on the task. A caller
-- that owned an earlier attempt is told how its own attempt ended; the owner is told as before.
BEGIN;
SELECT plan(12);

INSERT INTO task_roles (role) VALUES ('t29_claimed'), ('t29_moved_on'), ('t29_done');

-- The SQLSTATE and DETAIL of the error a statement raises.
CREATE FUNCTION pg_temp.refusal(statement text)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    v_state  text;
    v_detail text;
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_detail = PG_EXCEPTION_DETAIL;
    RETURN v_state || ': ' || v_detail;
END;
$$;

-- The five raising worker-side calls, as SQL templates of (task_id, worker_id, attempt).
CREATE TEMP TABLE worker_call (ord integer PRIMARY KEY, name text NOT NULL, template text NOT NULL);
INSERT INTO worker_call (ord, name, template) VALUES
    (1, 'complete_task', $$SELECT complete_task(%L, %L, %L, tests.claim_token(%1$L, %3$L), '{"n": 1}')$$),
    (2, 'fail_task',     $$SELECT fail_task(%L, %L, %L, tests.claim_token(%1$L, %3$L), 'boom')$$),
    (3, 'start_task',    $$SELECT start_task(%L, %L, %L, tests.claim_token(%1$L, %3$L))$$),
    (4, 'snooze_task',   $$SELECT snooze_task(%L, %L, %L, tests.claim_token(%1$L, %3$L), now() + interval '1 minute')$$),
    (5, 'release_task',  $$SELECT release_task(%L, %L, %L, tests.claim_token(%1$L, %3$L))$$);

-- Asserts the SQLSTATE and DETAIL of every worker call for (task_id, worker_id, attempt): 5 tests.
CREATE FUNCTION pg_temp.every_call_refused_with(task_id bigint, worker_id text, attempt integer, refusal text, why text)
RETURNS SETOF text
LANGUAGE plpgsql
AS $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT * FROM worker_call ORDER BY ord LOOP
        RETURN NEXT is(
            pg_temp.refusal(format(c.template, every_call_refused_with.task_id, every_call_refused_with.worker_id,
                                   every_call_refused_with.attempt)),
            every_call_refused_with.refusal,
            format('Should refuse %s by %s %s', c.name, every_call_refused_with.worker_id, every_call_refused_with.why));
    END LOOP;
END;
$$;

/****************************************************************************/
-- Another worker's claimed task: the refusal names neither its worker nor its attempt

SELECT id AS claimed_id FROM tests.make_claimed_task(worker_id := 'victim-7f3a', role := 't29_claimed') \gset

SELECT * FROM pg_temp.every_call_refused_with(:claimed_id, 'thief', 1,
    '55000: The task''s current worker and attempt are told to that worker only.',
    'without naming the owner or its attempt');
SELECT is((SELECT (status, worker_id, attempt)::text FROM worker_tasks WHERE id = :claimed_id),
    '(claimed,victim-7f3a,1)', 'Should leave the victim''s task as it was');

/****************************************************************************/
-- A worker whose attempt was recovered and claimed again by another: told its attempt ended

SELECT id AS moved_id FROM tests.make_claimed_task(worker_id := 'w-old', role := 't29_moved_on', started := true) \gset
SELECT tests.age_heartbeat(:moved_id, interval '1 day') AS aged \gset
SELECT is(recover_stale_tasks(1), 1, 'Should recover the old worker''s silent task');
SELECT is((SELECT attempt FROM claim_task('t29_moved_on', 'w-new')), 2, 'Should let another worker claim it at attempt 2');

SELECT is(pg_temp.refusal(format($$SELECT complete_task(%s, 'w-old', 1, tests.claim_token(%1$s, 1))$$, :moved_id)),
    '55000: Attempt 1 of this worker ended: retried.',
    'Should tell the old owner its attempt ended, without naming the new owner');
SELECT is(pg_temp.refusal(format($$SELECT fail_task(%s, 'w-old', 2, tests.claim_token(%1$s, 2), 'boom')$$, :moved_id)),
    '55000: The task''s current worker and attempt are told to that worker only.',
    'Should tell the old owner nothing of the attempt it never held');

/****************************************************************************/
-- The owner itself, calling again after its own completion: told what became of the task

SELECT id AS done_id, attempt AS done_attempt FROM tests.make_claimed_task(worker_id := 'w-done', role := 't29_done') \gset
SELECT is((complete_task(:done_id, 'w-done', :done_attempt, tests.claim_token(:done_id, :done_attempt))).status, 'completed', 'Should complete the task');
SELECT is(pg_temp.refusal(format($$SELECT fail_task(%s, 'w-done', %s, tests.claim_token(%1$s, %2$s), 'late')$$, :done_id, :done_attempt)),
    '55000: The task is completed at attempt 1, worker ''w-done''.',
    'Should tell the owner the state of its own task');

SELECT * FROM finish();
ROLLBACK;
