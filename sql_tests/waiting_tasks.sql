-- waiting_tasks: v_waiting_tasks says what each pending, claimed or running task waits for
-- (its handler, a worker, its store, an open circuit, a retry's backoff, a snooze, its schedule)
-- and from when claim_task may take it; finished tasks are not in it.
BEGIN;
SELECT plan(8);

INSERT INTO task_roles (role, description, requires_store, max_retries, backoff_base, backoff_cap, backoff_jitter)
VALUES ('t32_role', 'pgTAP waiting_tasks', false, 3, '30 seconds', '1 hour', 'none');
-- t32_down's circuit is open for 5 more minutes.
INSERT INTO platform_governance (platform, consecutive_failures, open_until)
VALUES ('t32_down', 5, now() + interval '5 minutes');

/****************************************************************************/
-- Fixture: one task per reason. The claimed ones first: a claim takes the highest priority.

SELECT tests.make_store() AS busy_store \gset
INSERT INTO tests.fx SELECT 'running', id
FROM tests.make_claimed_task(worker_id := 't32-w1', role := 't32_role', dispensary_id := :busy_store, started := true);
INSERT INTO tests.fx SELECT 'retry', id FROM tests.make_claimed_task(worker_id := 't32-w2', role := 't32_role');
SELECT status AS failed FROM fail_task((SELECT id FROM tests.fx WHERE name = 'retry'), 't32-w2', 1, tests.claim_token((SELECT id FROM tests.fx WHERE name = 'retry'), 1), 'HTTP 503') \gset
INSERT INTO tests.fx SELECT 'retry_at', id FROM tests.make_claimed_task(worker_id := 't32-w3', role := 't32_role');
SELECT status AS failed FROM fail_task((SELECT id FROM tests.fx WHERE name = 'retry_at'), 't32-w3', 1, tests.claim_token((SELECT id FROM tests.fx WHERE name = 'retry_at'), 1), 'rate limited',
                                       retry_at := now() + interval '7 minutes') \gset
INSERT INTO tests.fx SELECT 'snooze', id FROM tests.make_claimed_task(worker_id := 't32-w4', role := 't32_role');
SELECT status AS snoozed FROM snooze_task((SELECT id FROM tests.fx WHERE name = 'snooze'), 't32-w4', 1, tests.claim_token((SELECT id FROM tests.fx WHERE name = 'snooze'), 1),
                                          now() + interval '15 minutes') \gset
INSERT INTO tests.fx SELECT 'done', id FROM tests.make_claimed_task(worker_id := 't32-w5', role := 't32_role');
SELECT status AS completed FROM complete_task((SELECT id FROM tests.fx WHERE name = 'done'), 't32-w5', 1, tests.claim_token((SELECT id FROM tests.fx WHERE name = 'done'), 1)) \gset

INSERT INTO tests.fx VALUES ('worker', tests.make_task(role := 't32_role', scheduled_for := now() - interval '2 minutes'));
INSERT INTO tests.fx VALUES ('schedule', tests.make_task(role := 't32_role', scheduled_for := now() + interval '1 hour'));
INSERT INTO tests.fx VALUES ('store', tests.make_task(role := 't32_role', dispensary_id := :busy_store));
INSERT INTO tests.fx SELECT 'circuit', id FROM enqueue_task('t32_role', platform := 't32_down');
-- Scheduled after the circuit reopens: the schedule is what it waits for.
INSERT INTO tests.fx SELECT 'circuit_then_schedule', id
FROM enqueue_task('t32_role', platform := 't32_down', scheduled_for := now() + interval '1 hour');
INSERT INTO tests.fx SELECT 'cancelled', id FROM enqueue_task('t32_role');
SELECT status AS cancelled FROM cancel_task((SELECT id FROM tests.fx WHERE name = 'cancelled')) \gset

/****************************************************************************/
-- Structure

SELECT has_view('v_waiting_tasks', 'Should have view v_waiting_tasks');
SELECT columns_are('v_waiting_tasks', ARRAY[
    'id', 'role', 'status', 'dispensary_id', 'platform', 'worker_id', 'attempt', 'retry_count',
    'max_retries', 'waiting_for', 'ready_at', 'error_message', 'concurrency_kind', 'concurrency_key',
    'concurrency_running', 'concurrency_limit'],
    'Should give v_waiting_tasks exactly its columns');

/****************************************************************************/
-- Behaviour

SELECT results_eq(
    $$SELECT fx.name, w.waiting_for, w.ready_at
      FROM v_waiting_tasks w JOIN tests.fx ON fx.id = w.id ORDER BY fx.name$$,
    $$VALUES ('circuit', 'circuit', now() + interval '5 minutes'),
             ('circuit_then_schedule', 'schedule', now() + interval '1 hour'),
             ('retry', 'retry', now() + interval '30 seconds'),
             ('retry_at', 'retry', now() + interval '7 minutes'),
             ('running', 'handler', NULL),
             ('schedule', 'schedule', now() + interval '1 hour'),
             ('snooze', 'snooze', now() + interval '15 minutes'),
             ('store', 'store', now()),
             ('worker', 'worker', now() - interval '2 minutes')$$,
    'Should say what each active task waits for and from when it can be claimed, and list no finished task');
SELECT results_eq(
    $$SELECT w.status, w.worker_id, w.attempt, w.retry_count, w.error_message
      FROM v_waiting_tasks w JOIN tests.fx ON fx.id = w.id WHERE fx.name IN ('running', 'retry') ORDER BY fx.name$$,
    $$VALUES ('pending', NULL::text, 1, 1, 'HTTP 503'), ('running', 't32-w1', 1, 0, NULL)$$,
    'Should give a retry its failure and a running task its worker');

-- The claim agrees: of all these, it takes only the one waiting for a worker.
SELECT is(ARRAY(SELECT id FROM claim_tasks('t32_role', 't32-w6', 10)),
          ARRAY[(SELECT id FROM tests.fx WHERE name = 'worker')],
          'Should claim exactly the task the view says waits for a worker');
SELECT is((SELECT waiting_for FROM v_waiting_tasks WHERE id = (SELECT id FROM tests.fx WHERE name = 'worker')), 'handler',
    'Should say a task just claimed waits for its handler');

-- Time moves on: retries and the circuit pass, the store's task ends.
SELECT status AS completed FROM complete_task((SELECT id FROM tests.fx WHERE name = 'running'), 't32-w1', 1, tests.claim_token((SELECT id FROM tests.fx WHERE name = 'running'), 1)) \gset
SELECT set_taskpool_clock_offset('10 minutes') AS shifted \gset
SELECT results_eq(
    $$SELECT fx.name, w.waiting_for FROM v_waiting_tasks w JOIN tests.fx ON fx.id = w.id
      WHERE fx.name IN ('circuit', 'retry', 'retry_at', 'store') ORDER BY fx.name$$,
    $$VALUES ('circuit', 'worker'), ('retry', 'worker'), ('retry_at', 'worker'), ('store', 'worker')$$,
    'Should say a task waits for a worker once its backoff, its circuit and its store''s other task are over');
SELECT set_taskpool_clock_offset('0') AS shifted \gset

/****************************************************************************/
-- Privileges: an operator's view, not a worker's

SET ROLE taskpool_worker;
SELECT throws_ok($$SELECT * FROM v_waiting_tasks$$, '42501', NULL,
    'Should not let a worker login read v_waiting_tasks');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
