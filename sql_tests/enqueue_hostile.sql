-- enqueue_hostile: what enqueue refuses so that no worker dies loading it, and who is woken
-- when a store frees up.
--
-- Payloads: a worker loads every payload it claims (Python's json); JSON nested deeper than 100
-- levels or holding a number of more than 1000 digits before the decimal point is refused at
-- enqueue with 22023, by every path that enqueues (enqueue_task, enqueue_tasks, follow-ups).
--
-- Wake-ups happen at commit (task_wake_requests); SET CONSTRAINTS ALL IMMEDIATE makes them
-- happen at the end of each statement, so that this one transaction can see them.
BEGIN;
SELECT plan(21);
SET CONSTRAINTS ALL IMMEDIATE;

CREATE FUNCTION pg_temp.nested(levels integer) RETURNS jsonb LANGUAGE sql
AS $$ SELECT ('{"n": ' || repeat('[', levels - 1) || repeat(']', levels - 1) || '}')::jsonb $$;

CREATE FUNCTION pg_temp.task_count() RETURNS bigint LANGUAGE sql
AS $$ SELECT count(*) FROM worker_tasks $$;

SELECT pg_temp.task_count() AS tasks_before \gset

/****************************************************************************/
-- Payloads a worker cannot load

SELECT throws_ok(
    $$SELECT enqueue_task('analytics_refresh', ('{"n": ' || repeat('9', 5000) || '}')::jsonb)$$,
    '22023',
    'payload holds the number 99999999999999999999... (5000 digits); numbers may have at most 1000 digits before the decimal point',
    'A number of 5,000 digits should be refused');
SELECT throws_ok(
    $$SELECT enqueue_task('analytics_refresh', '{"n": [1, {"m": -1e1000}]}')$$,
    '22023',
    'payload holds the number -1000000000000000000... (1001 digits); numbers may have at most 1000 digits before the decimal point',
    'A negative number of 1001 digits, written short, should be refused');
SELECT throws_ok(
    $$SELECT enqueue_task('analytics_refresh', pg_temp.nested(1500))$$,
    '22023',
    'payload is nested more than 100 levels deep',
    'JSON nested 1,500 deep should be refused');
SELECT throws_ok(
    $$SELECT enqueue_task('analytics_refresh', pg_temp.nested(101))$$,
    '22023',
    'payload is nested more than 100 levels deep',
    'JSON nested 101 deep should be refused');
SELECT lives_ok(
    $$SELECT enqueue_task('analytics_refresh', pg_temp.nested(100))$$,
    'JSON nested 100 deep should be accepted');
SELECT lives_ok(
    $$SELECT enqueue_task('analytics_refresh', jsonb_build_object(
        'max', ('9' || repeat('9', 999) || '.5')::numeric, 'min', '-1e999'::numeric,
        'tiny', '1e-2000'::numeric, 'long', 0.1000000000000000000000000000001))$$,
    'Numbers of up to 1000 digits before the decimal point should be accepted, however many after');
SELECT is(pg_temp.task_count(), :tasks_before::bigint + 2, 'Only the acceptable payloads should have made tasks');

SELECT throws_ok(
    format($$SELECT count(*) FROM enqueue_tasks(jsonb_build_array(
        '{"role": "analytics_refresh"}'::jsonb,
        jsonb_build_object('role', 'analytics_refresh', 'payload', %L::jsonb)))$$, pg_temp.nested(1500)),
    '22023',
    'tasks[1]: payload is nested more than 100 levels deep',
    'A batch with one deep payload should be refused, naming the spec');
SELECT throws_ok(
    $$SELECT count(*) FROM enqueue_tasks(jsonb_build_array(
        '{"role": "analytics_refresh"}'::jsonb,
        jsonb_build_object('role', 'analytics_refresh', 'payload', ('{"n": ' || repeat('9', 5000) || '}')::jsonb)))$$,
    '22023',
    'tasks[1]: payload holds the number 99999999999999999999... (5000 digits); numbers may have at most 1000 digits before the decimal point',
    'A batch with one huge number should be refused, naming the spec');
SELECT is(pg_temp.task_count(), :tasks_before::bigint + 2, 'A refused batch should add nothing');

SELECT id AS parent_id FROM tests.make_claimed_task(worker_id := 't25-w', role := 'store_discovery') \gset
SELECT throws_ok(
    format($$SELECT complete_task(%s, 't25-w', 1, tests.claim_token(%1$s, 1), '{}', jsonb_build_array(
        jsonb_build_object('role', 'analytics_refresh', 'payload', pg_temp.nested(1500))))$$, :parent_id),
    '22023',
    'follow_ups[0]: payload is nested more than 100 levels deep',
    'A follow-up with a deep payload should be refused');
SELECT throws_ok(
    format($$SELECT * FROM complete_tasks('t25-w', tests.with_claim_tokens(jsonb_build_array(jsonb_build_object(
        'task_id', %s, 'attempt', 1, 'result', '{}'::jsonb,
        'follow_ups', jsonb_build_array(jsonb_build_object('role', 'analytics_refresh',
            'payload', ('{"n": ' || repeat('9', 5000) || '}')::jsonb))))))$$, :parent_id),
    '22023',
    'follow_ups[1][0]: payload holds the number 99999999999999999999... (5000 digits); numbers may have at most 1000 digits before the decimal point',
    'A batched completion''s follow-up with a huge number should be refused');
SELECT is((SELECT status FROM worker_tasks WHERE id = :parent_id), 'claimed',
    'A completion refused for its follow-up should leave the task as it was');

/****************************************************************************/
-- A store that frees up wakes a worker for its next ready task

-- Runs `outcome` on a running product_refresh of a store while a product_resync of the store
-- waits, and a product_resync worker and a worker of another role sleep: who is still asleep?
CREATE FUNCTION pg_temp.asleep_after(outcome text) RETURNS text[] LANGUAGE plpgsql
AS $$
DECLARE
    v_store   integer := tests.make_store(name := 't25 ' || outcome);
    v_running worker_tasks;
BEGIN
    PERFORM cancel_task(t.id) FROM worker_tasks t WHERE t.status = 'pending';
    v_running := tests.make_claimed_task(worker_id := 't25-refresh', role := 'product_refresh',
                                         dispensary_id := v_store, started := true, max_retries := 0);
    PERFORM tests.make_task(role := 'product_resync', dispensary_id := v_store);
    IF (SELECT count(*) FROM claim_and_start_tasks('product_resync', 't25-resync')) <> 0 THEN
        RAISE EXCEPTION 'the store should be busy';
    END IF;
    PERFORM mark_worker_waiting('t25-resync');
    PERFORM mark_worker_waiting('t25-other');
    EXECUTE format(outcome, v_running.id, v_running.worker_id, v_running.attempt);
    RETURN tests.waiting_workers();
END;
$$;

SELECT register_worker(w, r, 'host', 1)
FROM (VALUES ('t25-resync', 'product_resync'), ('t25-other', 'analytics_refresh')) AS v(w, r);

SELECT is(pg_temp.asleep_after($$SELECT complete_task(%s, %L, %s, tests.claim_token(%1$s, %3$s))$$), ARRAY['t25-other'],
    'A completed store task should wake a worker of the store''s next ready task');
SELECT is(pg_temp.asleep_after($$SELECT fail_task(%s, %L, %s, tests.claim_token(%1$s, %3$s), 'boom')$$), ARRAY['t25-other'],
    'A failed store task should wake a worker of the store''s next ready task');
SELECT is(pg_temp.asleep_after($$SELECT cancel_task(%1$s), complete_task(%1$s, %2$L, %3$s, tests.claim_token(%1$s, %3$s))$$), ARRAY['t25-other'],
    'A cancelled store task should wake a worker of the store''s next ready task');
SELECT is(pg_temp.asleep_after($$SELECT snooze_task(%s, %L, %s, tests.claim_token(%1$s, %3$s), now() + interval '1 hour')$$), ARRAY['t25-other'],
    'A store task snoozed for later should wake a worker of the store''s next ready task');
SELECT is(pg_temp.asleep_after($$SELECT release_task(%s, %L, %s, tests.claim_token(%1$s, %3$s))$$), ARRAY['t25-other'],
    'A released store task should wake a worker of the store''s other ready task too');
SELECT is(pg_temp.asleep_after($$SELECT heartbeat_task(%s, %L, %s, tests.claim_token(%1$s, %3$s))$$), ARRAY['t25-other', 't25-resync'],
    'A heartbeat frees no store and should wake nobody');

SELECT is(pg_temp.asleep_after($$UPDATE worker_tasks SET scheduled_for = now() + interval '1 hour'
                                 WHERE role = 'product_resync' AND status = 'pending';
                                 SELECT complete_task(%s, %L, %s, tests.claim_token(%1$s, %3$s))$$),
    ARRAY['t25-other', 't25-resync'],
    'A store whose other tasks are scheduled later should wake nobody');
SELECT is(pg_temp.asleep_after($$SELECT cancel_task(id) FROM worker_tasks WHERE role = 'product_resync' AND status = 'pending';
                                 SELECT complete_task(%s, %L, %s, tests.claim_token(%1$s, %3$s))$$),
    ARRAY['t25-other', 't25-resync'],
    'A store with nothing else to do should wake nobody');

SELECT * FROM finish();
ROLLBACK;
