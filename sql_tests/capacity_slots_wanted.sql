-- capacity_slots_wanted: the autoscaler's number, task_slots_wanted(role, drain_hours), on roles
-- of this file's own: nothing, ready tasks with the rate unknown, a known rate (60 tasks a
-- slot-hour), tasks scheduled later, busy slots kept; bad input; the workers' login may call it.
BEGIN;
SELECT plan(19);

INSERT INTO task_roles (role, description, requires_store, max_retries, stale_threshold, backoff_base, backoff_cap)
SELECT r, 'pgTAP capacity_slots_wanted', false, 3, '10 minutes', '30 seconds', '1 hour'
FROM unnest(ARRAY['t48_idle', 't48_new', 't48_known', 't48_later']) AS r;

-- pg_temp.claim_n: claims n tasks of the role for worker_id, running; returns how many it got.
CREATE FUNCTION pg_temp.claim_n(role text, worker_id text, n integer)
RETURNS integer
LANGUAGE sql
AS $$
    SELECT count(*)::integer FROM claim_and_start_tasks(claim_n.role, claim_n.worker_id, claim_n.n);
$$;

-- pg_temp.done_in: a task of the role claimed and completed, its claim moved back to take `took`.
CREATE FUNCTION pg_temp.done_in(role text, took interval)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_task worker_tasks;
BEGIN
    PERFORM tests.make_task(role := done_in.role, scheduled_for := now() - interval '1 day');
    SELECT * INTO v_task FROM claim_task(done_in.role, 't48-history');
    PERFORM complete_task(v_task.id, v_task.worker_id, v_task.attempt, tests.claim_token(v_task.id, v_task.attempt), '{}');
    UPDATE worker_tasks t SET claimed_at = t.completed_at - done_in.took WHERE t.id = v_task.id;
END;
$$;

/****************************************************************************/
-- nothing pending, nothing running

SELECT is(task_slots_wanted('t48_idle'), 0, 'Should want no slot for a role with no task');

/****************************************************************************/
-- ready tasks, no completion in the last hour: one slot more than are busy

SELECT count(tests.make_task(role := 't48_new')) AS made FROM generate_series(1, 50) \gset
SELECT is(task_slots_wanted('t48_new'), 1, 'Should want one slot for ready tasks while the rate is unknown');
SELECT is(pg_temp.claim_n('t48_new', 't48-w1', 4), 4, 'Should claim 4 t48_new tasks (fixture)');
SELECT is(task_slots_wanted('t48_new'), 5, 'Should want one slot more than are busy while the rate is unknown');
SELECT is(task_slots_wanted('t48_new', 8), 5, 'Should not divide by drain_hours while the rate is unknown');

/****************************************************************************/
-- a known rate: ten completions of 60 s in the last hour are 60 tasks a slot-hour

SELECT count(pg_temp.done_in('t48_known', interval '60 seconds')) AS made FROM generate_series(1, 10) \gset
SELECT is((SELECT tasks_per_worker_hour FROM v_worker_capacity WHERE role = 't48_known'), 60.0,
    'Should see 60 t48_known tasks a slot-hour in v_worker_capacity (fixture)');
SELECT count(tests.make_task(role := 't48_known')) AS made FROM generate_series(1, 150) \gset
SELECT is(task_slots_wanted('t48_known'), 3, 'Should want ceil(150 / 60) slots to drain 150 ready tasks in an hour');
SELECT is(task_slots_wanted('t48_known', 0.5), 5, 'Should want ceil(150 / 30) slots to drain them in half an hour');
SELECT is(task_slots_wanted('t48_known', 4), 1, 'Should want ceil(150 / 240) slots to drain them in 4 hours');
SELECT is(pg_temp.claim_n('t48_known', 't48-w2', 8), 8, 'Should claim 8 t48_known tasks (fixture)');
SELECT is(task_slots_wanted('t48_known'), 8,
    'Should want at least the busy slots when fewer drain the 142 ready tasks in an hour');

/****************************************************************************/
-- tasks scheduled later need no slot yet; running ones keep theirs

SELECT count(pg_temp.done_in('t48_later', interval '60 seconds')) AS made \gset
SELECT count(tests.make_task(role := 't48_later', scheduled_for := now() + interval '3 hours')) AS made FROM generate_series(1, 500) \gset
SELECT is((SELECT workers_needed_for_1_hour FROM v_worker_capacity WHERE role = 't48_later'), 9,
    'Should count the 500 later tasks in the view''s workers_needed_for_1_hour (fixture)');
SELECT is(task_slots_wanted('t48_later'), 0, 'Should want no slot for tasks scheduled later');
SELECT count(tests.make_task(role := 't48_later')) AS made FROM generate_series(1, 2) \gset
SELECT is(pg_temp.claim_n('t48_later', 't48-w3', 2), 2, 'Should claim the 2 ready t48_later tasks (fixture)');
SELECT is(task_slots_wanted('t48_later'), 2, 'Should keep the busy slots with no ready task');

/****************************************************************************/
-- bad input; privileges

SELECT throws_ok($$SELECT task_slots_wanted('t48_nope')$$, '22023', 'unknown role ''t48_nope''',
    'Should reject an unknown role');
SELECT throws_ok($$SELECT task_slots_wanted('t48_idle', 0)$$, '22023', 'drain_hours must be positive, not 0',
    'Should reject drain_hours 0');
SELECT throws_ok($$SELECT task_slots_wanted('t48_idle', NULL)$$, '22004', 'drain_hours is required',
    'Should reject drain_hours NULL');
SELECT ok(has_function_privilege('taskpool_worker', 'task_slots_wanted(text, numeric)', 'EXECUTE'),
    'Should let taskpool_worker (an autoscaler with the workers'' login) call it');

SELECT * FROM finish();
ROLLBACK;
