-- capacity: v_worker_capacity and worker_capacity on a fixture with known numbers (work
-- waiting, workers seen, the last hour's throughput, what it takes to drain), including the
-- documented NULLs and 0s; then the health views v_task_counts, v_active_workers, v_stuck_tasks.
BEGIN;
SELECT plan(30);

-- Roles of our own, so every number in the views is this file's:
--   t13_a: the full picture (work waiting, busy and idle workers, throughput, failures)
--   t13_b: fast (10 s and 30 s a task) with nothing pending
--   t13_c: work waiting but no completion in the last hour (throughput unknown)
--   t13_d: work waiting and a known throughput, but no worker seen lately
--   t13_e: nothing at all
INSERT INTO task_roles (role, description, requires_store, max_retries, stale_threshold, backoff_base, backoff_cap)
SELECT r, 'pgTAP capacity', false, 3, '10 minutes', '30 seconds', '1 hour'
FROM unnest(ARRAY['t13_a', 't13_b', 't13_c', 't13_d', 't13_e']) AS r;

-- pg_temp.claimed: enqueues a task of the role and claims exactly it for worker_id; returns the row.
CREATE FUNCTION pg_temp.claimed(role text, worker_id text)
RETURNS worker_tasks
LANGUAGE plpgsql
AS $$
DECLARE
    v_id   bigint := tests.make_task(role := claimed.role);
    v_task worker_tasks;
BEGIN
    SELECT * INTO v_task FROM claim_task(claimed.role, claimed.worker_id);
    IF v_task.id IS DISTINCT FROM v_id THEN
        RAISE EXCEPTION 'pg_temp.claimed claimed task % instead of %', v_task.id, v_id;
    END IF;
    RETURN v_task;
END;
$$;

-- pg_temp.completed: a task of the role created, claimed and completed the given times ago
-- (only timestamps are backdated: the status changes go through the API).
CREATE FUNCTION pg_temp.completed(role text, created_ago interval, claimed_ago interval, completed_ago interval)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_task worker_tasks := pg_temp.claimed(completed.role, 't13-history');
BEGIN
    PERFORM complete_task(v_task.id, v_task.worker_id, v_task.attempt, tests.claim_token(v_task.id, v_task.attempt), '{}');
    UPDATE worker_tasks t
    SET created_at = now() - completed.created_ago,
        claimed_at = now() - completed.claimed_ago,
        last_heartbeat_at = now() - completed.completed_ago,
        completed_at = now() - completed.completed_ago
    WHERE t.id = v_task.id;
    RETURN v_task.id;
END;
$$;

-- pg_temp.failed: a task of the role claimed and failed now (retried when retryable); returns its id.
CREATE FUNCTION pg_temp.failed(role text, retryable boolean)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_task worker_tasks := pg_temp.claimed(failed.role, 't13-history');
BEGIN
    PERFORM fail_task(v_task.id, v_task.worker_id, v_task.attempt, tests.claim_token(v_task.id, v_task.attempt), 'boom', retryable := failed.retryable);
    RETURN v_task.id;
END;
$$;

/****************************************************************************/
-- Fixture. Tasks created over an hour ago come first: v_worker_capacity counts arrivals by id
-- after the newest task created over an hour ago.

-- Older than the last hour: a t13_a completion and failure, a t13_c completion.
INSERT INTO tests.fx VALUES ('a_done_old', pg_temp.completed('t13_a', interval '3 hours', interval '3 hours', interval '2 hours'));
INSERT INTO tests.fx VALUES ('a_failed_old', pg_temp.failed('t13_a', false));
UPDATE worker_tasks SET created_at = now() - interval '3 hours', claimed_at = now() - interval '3 hours',
                        completed_at = now() - interval '2 hours'
WHERE id = (SELECT id FROM tests.fx WHERE name = 'a_failed_old');
UPDATE worker_task_attempts SET claimed_at = now() - interval '3 hours', ended_at = now() - interval '2 hours'
WHERE task_id = (SELECT id FROM tests.fx WHERE name = 'a_failed_old');
INSERT INTO tests.fx VALUES ('c_done_old', pg_temp.completed('t13_c', interval '3 hours', interval '150 minutes', interval '2 hours'));

-- t13_a in the last hour: completions of 1200 s and 2400 s (mean 1800 s: 2.0 tasks an hour), a
-- failed attempt and a retried one, a claimed and a running task, 21 pending (18 ready).
INSERT INTO tests.fx VALUES ('a_done_1', pg_temp.completed('t13_a', interval '50 minutes', interval '45 minutes', interval '25 minutes'));
INSERT INTO tests.fx VALUES ('a_done_2', pg_temp.completed('t13_a', interval '55 minutes', interval '50 minutes', interval '10 minutes'));
INSERT INTO tests.fx VALUES ('a_failed', pg_temp.failed('t13_a', false));
INSERT INTO tests.fx VALUES ('a_retried', pg_temp.failed('t13_a', true));
INSERT INTO tests.fx SELECT 'a_claimed', id FROM pg_temp.claimed('t13_a', 't13-a-w1');
INSERT INTO tests.fx SELECT 'a_running', id FROM pg_temp.claimed('t13_a', 't13-a-w3');
SELECT start_task(t.id, t.worker_id, t.attempt, tests.claim_token(t.id, t.attempt)) AS started FROM worker_tasks t WHERE t.id = (SELECT id FROM tests.fx WHERE name = 'a_running') \gset
SELECT tests.age_heartbeat((SELECT id FROM tests.fx WHERE name = 'a_claimed'), interval '9 minutes') AS aged \gset
SELECT tests.age_heartbeat((SELECT id FROM tests.fx WHERE name = 'a_running'), interval '11 minutes') AS aged \gset
INSERT INTO tests.fx VALUES ('a_oldest_ready', tests.make_task(role := 't13_a', scheduled_for := now() - interval '15 minutes'));
SELECT count(tests.make_task(role := 't13_a')) AS made FROM generate_series(1, 17) \gset
SELECT count(tests.make_task(role := 't13_a', scheduled_for := now() + interval '1 hour')) AS made FROM generate_series(1, 3) \gset

-- t13_b: 10 s and 30 s (mean 20 s: 180.0 tasks an hour), nothing pending.
INSERT INTO tests.fx VALUES ('b_done_1', pg_temp.completed('t13_b', interval '11 minutes', interval '10 minutes', interval '590 seconds'));
INSERT INTO tests.fx VALUES ('b_done_2', pg_temp.completed('t13_b', interval '6 minutes', interval '5 minutes', interval '270 seconds'));

-- t13_c: 3 pending, no completion in the last hour.
SELECT count(tests.make_task(role := 't13_c')) AS made FROM generate_series(1, 3) \gset

-- t13_d: 600 s and 1200 s (mean 900 s: 4.0 tasks an hour), 10 pending.
INSERT INTO tests.fx VALUES ('d_done_1', pg_temp.completed('t13_d', interval '45 minutes', interval '40 minutes', interval '30 minutes'));
INSERT INTO tests.fx VALUES ('d_done_2', pg_temp.completed('t13_d', interval '50 minutes', interval '45 minutes', interval '25 minutes'));
SELECT count(tests.make_task(role := 't13_d')) AS made FROM generate_series(1, 10) \gset

-- Workers: t13_a has two seen now, one 3 minutes ago and one exactly 2 minutes ago; t13_c one
-- seen now; t13_d one seen 10 minutes ago.
SELECT count(*) AS registered FROM (
    SELECT register_worker(w, r, 'host-' || w, 4000 + n)
    FROM (VALUES (1, 't13-a-w1', 't13_a'), (2, 't13-a-w2', 't13_a'), (3, 't13-a-w3', 't13_a'),
                 (4, 't13-a-w4', 't13_a'), (5, 't13-c-w1', 't13_c'), (6, 't13-d-w1', 't13_d')) AS v(n, w, r)
) AS registered \gset
UPDATE task_workers SET last_seen_at = now() - interval '3 minutes' WHERE worker_id = 't13-a-w3';
UPDATE task_workers SET last_seen_at = now() - interval '2 minutes' WHERE worker_id = 't13-a-w4';
UPDATE task_workers SET last_seen_at = now() - interval '10 minutes' WHERE worker_id = 't13-d-w1';

/****************************************************************************/
-- Structure

SELECT has_view('v_worker_capacity', 'Should have view v_worker_capacity');
SELECT columns_are('v_worker_capacity', ARRAY[
    'role', 'pending_tasks', 'ready_tasks', 'running_tasks', 'active_workers', 'tasks_per_worker_hour',
    'estimated_hours_to_drain', 'workers_needed_for_1_hour', 'workers_needed_for_4_hours',
    'workers_needed_for_8_hours', 'oldest_ready_age', 'arrivals_last_hour', 'completed_last_hour',
    'failed_attempts_last_hour', 'failure_rate', 'paused', 'active_processes', 'active_slots',
    'slots_per_process', 'tasks_per_slot_hour', 'slots_needed_for_1_hour', 'slots_needed_for_4_hours',
    'slots_needed_for_8_hours', 'processes_needed_for_1_hour', 'processes_needed_for_4_hours',
    'processes_needed_for_8_hours'],
    'Should give v_worker_capacity exactly its columns');
SELECT has_index('worker_task_attempts', 'worker_task_attempts_ended_at_idx', ARRAY['ended_at'],
    'Should index attempts by ended_at for the last hour''s failures');
SELECT has_function('public', 'worker_capacity', ARRAY['text'], 'Should have worker_capacity(role)');
SELECT function_returns('public', 'worker_capacity', ARRAY['text'], 'jsonb', 'worker_capacity should return jsonb');
SELECT volatility_is('public', 'worker_capacity', ARRAY['text'], 'stable', 'worker_capacity should be stable');
SELECT has_view('v_task_counts', 'Should have view v_task_counts');
SELECT has_view('v_active_workers', 'Should have view v_active_workers');
SELECT has_view('v_stuck_tasks', 'Should have view v_stuck_tasks');

/****************************************************************************/
-- v_worker_capacity: the work and the workers

SELECT results_eq(
    $$SELECT role, pending_tasks, ready_tasks, running_tasks, active_workers
      FROM v_worker_capacity WHERE role LIKE 't13\_%' ORDER BY role$$,
    $$VALUES ('t13_a'::text, 22::bigint, 18::bigint, 2::bigint, 2::bigint),
             ('t13_b', 0, 0, 0, 0),
             ('t13_c', 3, 3, 0, 1),
             ('t13_d', 10, 10, 0, 0),
             ('t13_e', 0, 0, 0, 0)$$,
    'Should count pending (future ones too), ready and claimed or running tasks, and the workers seen in the last 2 minutes');
SELECT results_eq(
    $$SELECT role, oldest_ready_age FROM v_worker_capacity WHERE role LIKE 't13\_%' ORDER BY role$$,
    $$VALUES ('t13_a'::text, interval '15 minutes'), ('t13_b', NULL), ('t13_c', interval '0'),
             ('t13_d', interval '0'), ('t13_e', NULL)$$,
    'Should give the age of the oldest ready task, NULL with none ready');

/****************************************************************************/
-- v_worker_capacity: throughput and what it takes to drain

SELECT results_eq(
    $$SELECT tasks_per_worker_hour, estimated_hours_to_drain,
             workers_needed_for_1_hour, workers_needed_for_4_hours, workers_needed_for_8_hours
      FROM v_worker_capacity WHERE role = 't13_a'$$,
    $$VALUES (2.0::numeric, 5.50::numeric, 11, 3, 2)$$,
    'Should take 3600 / mean seconds from claim to completion (1800 s: 2.0), drain 22 tasks with 2 workers in 5.50 hours, and need 11, 3 and 2 workers');
SELECT is((SELECT tasks_per_worker_hour FROM v_worker_capacity WHERE role = 't13_b'), 180.0,
    'Should compute 180.0 tasks a worker-hour from completions of 10 s and 30 s');
SELECT results_eq(
    $$SELECT estimated_hours_to_drain, workers_needed_for_1_hour, workers_needed_for_4_hours, workers_needed_for_8_hours
      FROM v_worker_capacity WHERE role IN ('t13_b', 't13_e') ORDER BY role$$,
    $$VALUES (0::numeric, 0, 0, 0), (0, 0, 0, 0)$$,
    'Should answer 0 hours and 0 workers with nothing pending, whether or not the throughput is known');
SELECT results_eq(
    $$SELECT tasks_per_worker_hour, estimated_hours_to_drain,
             workers_needed_for_1_hour, workers_needed_for_4_hours, workers_needed_for_8_hours
      FROM v_worker_capacity WHERE role = 't13_c'$$,
    $$VALUES (NULL::numeric, NULL::numeric, NULL::integer, NULL::integer, NULL::integer)$$,
    'Should answer NULL throughput, hours and workers needed (no division error) with no completion in the last hour');
SELECT results_eq(
    $$SELECT tasks_per_worker_hour, estimated_hours_to_drain,
             workers_needed_for_1_hour, workers_needed_for_4_hours, workers_needed_for_8_hours
      FROM v_worker_capacity WHERE role = 't13_d'$$,
    $$VALUES (4.0::numeric, NULL::numeric, 3, 1, 1)$$,
    'Should answer NULL hours to drain with no worker seen, and still the workers needed (10 tasks at 4.0 an hour)');

/****************************************************************************/
-- v_worker_capacity: the last hour

SELECT results_eq(
    $$SELECT role, arrivals_last_hour, completed_last_hour, failed_attempts_last_hour
      FROM v_worker_capacity WHERE role LIKE 't13\_%' ORDER BY role$$,
    $$VALUES ('t13_a'::text, 27::bigint, 2::bigint, 2::bigint),
             ('t13_b', 2, 2, 0),
             ('t13_c', 3, 0, 0),
             ('t13_d', 12, 2, 0),
             ('t13_e', 0, 0, 0)$$,
    'Should count the last hour''s arrivals, completions and failed or retried attempts, not older ones');
SELECT results_eq(
    $$SELECT role, failure_rate FROM v_worker_capacity WHERE role IN ('t13_a', 't13_c', 't13_e') ORDER BY role$$,
    $$VALUES ('t13_a'::text, 0.500::numeric), ('t13_c', NULL), ('t13_e', NULL)$$,
    'Should give failed / (failed + completed) attempts as the failure rate: 2 of 4, and NULL with neither');
SELECT results_eq(
    $$SELECT role, failure_rate FROM v_worker_capacity WHERE role IN ('t13_b', 't13_d') ORDER BY role$$,
    $$VALUES ('t13_b'::text, 0.000::numeric), ('t13_d', 0.000)$$,
    'Should give a failure rate of 0 with completions and no failed attempt in the last hour');

/****************************************************************************/
-- worker_capacity: one role as JSON

SELECT is(worker_capacity('t13_a'),
    '{"role": "t13_a", "pending_tasks": 22, "ready_tasks": 18, "active_workers": 2, "tasks_per_worker_hour": 2.0,
      "workers_needed": {"for_1_hour": 11, "for_4_hours": 3, "for_8_hours": 2},
      "active_processes": 2, "active_slots": 2, "slots_per_process": 1.0, "tasks_per_slot_hour": 2.0,
      "estimated_hours_to_drain": 5.50,
      "processes_needed": {"for_1_hour": 11, "for_4_hours": 3, "for_8_hours": 2},
      "slots_needed": {"for_1_hour": 11, "for_4_hours": 3, "for_8_hours": 2}}'::jsonb,
    'Should report a role''s capacity as JSON');
SELECT is(worker_capacity('t13_c'),
    '{"role": "t13_c", "pending_tasks": 3, "ready_tasks": 3, "active_workers": 1, "tasks_per_worker_hour": null,
      "workers_needed": {"for_1_hour": null, "for_4_hours": null, "for_8_hours": null},
      "active_processes": 1, "active_slots": 1, "slots_per_process": 1.0, "tasks_per_slot_hour": null,
      "estimated_hours_to_drain": null,
      "processes_needed": {"for_1_hour": null, "for_4_hours": null, "for_8_hours": null},
      "slots_needed": {"for_1_hour": null, "for_4_hours": null, "for_8_hours": null}}'::jsonb,
    'Should report unknown throughput and workers needed as JSON nulls');
SELECT is(worker_capacity('t13_e'),
    '{"role": "t13_e", "pending_tasks": 0, "ready_tasks": 0, "active_workers": 0, "tasks_per_worker_hour": null,
      "workers_needed": {"for_1_hour": 0, "for_4_hours": 0, "for_8_hours": 0},
      "active_processes": 0, "active_slots": 0, "slots_per_process": 1.0, "tasks_per_slot_hour": null,
      "estimated_hours_to_drain": 0,
      "processes_needed": {"for_1_hour": 0, "for_4_hours": 0, "for_8_hours": 0},
      "slots_needed": {"for_1_hour": 0, "for_4_hours": 0, "for_8_hours": 0}}'::jsonb,
    'Should report 0 workers needed for a role with nothing pending');
SELECT is(worker_capacity('t13_a') ->> 'tasks_per_worker_hour', '2.0',
    'Should keep tasks_per_worker_hour rounded to one decimal in the JSON');
SELECT is(ARRAY(SELECT jsonb_object_keys(worker_capacity('t13_d')) ORDER BY 1),
    ARRAY['active_processes', 'active_slots', 'active_workers', 'estimated_hours_to_drain', 'pending_tasks',
          'processes_needed', 'ready_tasks', 'role', 'slots_needed', 'slots_per_process', 'tasks_per_slot_hour',
          'tasks_per_worker_hour', 'workers_needed'],
    'Should give worker_capacity exactly its top-level keys (the seed''s, and the same in slots and processes)');
SELECT is(ARRAY(SELECT jsonb_object_keys(worker_capacity('t13_d') -> 'workers_needed') ORDER BY 1),
    ARRAY['for_1_hour', 'for_4_hours', 'for_8_hours'],
    'Should give workers_needed exactly its keys');
SELECT throws_ok($$SELECT worker_capacity('t13_nope')$$, '22023', 'unknown role ''t13_nope''',
    'Should refuse an unknown role');
SELECT throws_ok($$SELECT worker_capacity(NULL)$$, '22023', 'unknown role NULL',
    'Should refuse a NULL role as unknown');

/****************************************************************************/
-- Health views

SELECT results_eq(
    $$SELECT role, status, tasks FROM v_task_counts WHERE role IN ('t13_a', 't13_e') ORDER BY status$$,
    $$VALUES ('t13_a'::text, 'claimed'::text, 1::bigint), ('t13_a', 'completed', 3),
             ('t13_a', 'failed', 2), ('t13_a', 'pending', 22), ('t13_a', 'running', 1)$$,
    'Should count tasks per role and status, listing no row for a role or status with none');

SELECT results_eq(
    $$SELECT a.worker_id, a.role, a.host, a.pid, a.last_seen_at, a.task_id, a.task_status, a.dispensary_id
      FROM v_active_workers a WHERE a.worker_id LIKE 't13-%' ORDER BY a.worker_id$$,
    $$VALUES ('t13-a-w1'::text, 't13_a'::text, 'host-t13-a-w1'::text, 4001, now(),
              (SELECT id FROM tests.fx WHERE name = 'a_claimed'), 'claimed'::text, NULL::integer),
             ('t13-a-w2', 't13_a', 'host-t13-a-w2', 4002, now(), NULL, NULL, NULL),
             ('t13-c-w1', 't13_c', 'host-t13-c-w1', 4005, now(), NULL, NULL, NULL)$$,
    'Should list the workers seen in the last 2 minutes, busy with their task or idle, and not the silent ones');

SELECT results_eq(
    $$SELECT s.id, s.role, s.status, s.worker_id, s.attempt, s.silent_for, s.stale_threshold
      FROM v_stuck_tasks s WHERE s.role LIKE 't13\_%' ORDER BY s.id$$,
    $$VALUES ((SELECT id FROM tests.fx WHERE name = 'a_running'), 't13_a'::text, 'running'::text, 't13-a-w3'::text, 1,
              interval '11 minutes', interval '10 minutes')$$,
    'Should list a task silent past its role''s stale threshold, and not one silent for less');

SELECT * FROM finish();
ROLLBACK;
