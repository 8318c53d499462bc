-- transitions: the task state machine. Every status change outside task_status_transitions is
-- refused by the _500_enforce_transition trigger, even by a direct UPDATE; every legal one is
-- reachable through the API; and a legal change applies what it implies (ownership cleared on the
-- way back to pending, completed_at stamped on the way to a finished status).
BEGIN;
SELECT plan(55);

-- A role of our own, so that claim order sees only this file's tasks.
INSERT INTO task_roles (role, description) VALUES ('t04_transitions', 'pgTAP transitions');

-- Row snapshots, to show that a refused change left the task as it was.
CREATE TEMP TABLE subject (status text PRIMARY KEY, id bigint NOT NULL, row_before jsonb NOT NULL);

-- The illegal pairs, written out so the plan is fixed: the 30 ordered pairs of distinct statuses
-- minus the 16 rows of task_status_transitions. ord fixes the output order. pending -> running
-- is legal: claim_and_start_tasks claims and starts in one statement; so is pending -> failed:
-- a claim fails a task whose attempt counter is spent; and pending -> completed:
-- mark_task_completed, an operator's completion without a worker.
CREATE TEMP TABLE illegal (ord integer PRIMARY KEY, from_status text NOT NULL, to_status text NOT NULL);
INSERT INTO illegal (ord, from_status, to_status) VALUES
    ( 3, 'running',   'claimed'),
    ( 4, 'completed', 'pending'),
    ( 5, 'completed', 'claimed'),
    ( 6, 'completed', 'running'),
    ( 7, 'completed', 'failed'),
    ( 8, 'completed', 'cancelled'),
    ( 9, 'failed',    'claimed'),
    (10, 'failed',    'running'),
    (11, 'failed',    'completed'),
    (12, 'failed',    'cancelled'),
    (13, 'cancelled', 'claimed'),
    (14, 'cancelled', 'running'),
    (15, 'cancelled', 'completed'),
    (16, 'cancelled', 'failed');

/****************************************************************************/
-- Structure

SELECT has_trigger('worker_tasks', '_500_enforce_transition',
    'Should have the _500_enforce_transition trigger on worker_tasks');
SELECT trigger_is('worker_tasks', '_500_enforce_transition', 'tg_worker_tasks__enforce_transition',
    'Should enforce transitions with tg_worker_tasks__enforce_transition()');

SELECT set_eq(
    'SELECT from_status, to_status FROM illegal',
    $$SELECT f.s AS from_status, t.s AS to_status
      FROM unnest(ARRAY['pending', 'claimed', 'running', 'completed', 'failed', 'cancelled']) AS f(s)
      CROSS JOIN unnest(ARRAY['pending', 'claimed', 'running', 'completed', 'failed', 'cancelled']) AS t(s)
      WHERE f.s <> t.s
      EXCEPT
      SELECT from_status, to_status FROM task_status_transitions$$,
    'Should list here exactly the status pairs task_status_transitions does not allow');

/****************************************************************************/
-- Illegal transitions: one task in each from-state, put there through the API

SELECT t.id AS pending_id FROM enqueue_task('t04_transitions') AS t \gset
SELECT t.id AS running_id FROM tests.make_claimed_task(role := 't04_transitions', started := true) AS t \gset
SELECT c.id AS completed_id
FROM tests.make_claimed_task(role := 't04_transitions') AS m,
     complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt), '{"done": true}') AS c \gset
SELECT f.id AS failed_id
FROM tests.make_claimed_task(role := 't04_transitions') AS m,
     fail_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt), 'permanent', retryable := false) AS f \gset
SELECT c.id AS cancelled_id FROM enqueue_task('t04_transitions') AS e, cancel_task(e.id) AS c \gset

INSERT INTO subject (status, id, row_before)
SELECT s.status, t.id, to_jsonb(t)
FROM (VALUES ('pending', :pending_id::bigint), ('running', :running_id), ('completed', :completed_id),
             ('failed', :failed_id), ('cancelled', :cancelled_id)) AS s(status, id)
JOIN worker_tasks t ON t.id = s.id;

SELECT is(
    ARRAY(SELECT row_before ->> 'status' FROM subject
          ORDER BY array_position(ARRAY['pending', 'running', 'completed', 'failed', 'cancelled'], status)),
    ARRAY['pending', 'running', 'completed', 'failed', 'cancelled'],
    'Should put one task in each state through the API');

SELECT throws_ok(
    format('UPDATE worker_tasks SET status = %L WHERE id = %s', i.to_status, s.id),
    '23514',
    format('illegal status transition for task %s: %s -> %s', s.id, i.from_status, i.to_status),
    format('Should refuse %s -> %s by a direct UPDATE', i.from_status, i.to_status))
FROM illegal i
JOIN subject s ON s.status = i.from_status
ORDER BY i.ord;

SELECT is(
    (SELECT to_jsonb(t) FROM worker_tasks t WHERE t.id = s.id),
    s.row_before,
    format('Should leave the %s task unchanged after refusing %s -> %s', i.from_status, i.from_status, i.to_status))
FROM illegal i
JOIN subject s ON s.status = i.from_status
ORDER BY i.ord;

SELECT throws_ok(
    $$INSERT INTO worker_tasks (role, status) VALUES ('t04_transitions', 'completed')$$,
    '23514',
    'a new task must be pending, not completed',
    'Should refuse to insert a task that is not pending');

/****************************************************************************/
-- Legal transitions, each through the API

-- pending -> claimed, claimed -> running, running -> completed
SELECT id AS a_id, worker_id AS a_worker, attempt AS a_attempt
FROM tests.make_claimed_task(role := 't04_transitions') \gset
SELECT is((SELECT status FROM worker_tasks WHERE id = :a_id), 'claimed',
    'Should go pending -> claimed by claim_task');
SELECT is((SELECT status FROM start_task(:a_id, :'a_worker', :a_attempt, tests.claim_token(:a_id, :a_attempt))), 'running',
    'Should go claimed -> running by start_task');
SELECT is((SELECT status FROM complete_task(:a_id, :'a_worker', :a_attempt, tests.claim_token(:a_id, :a_attempt), '{"n": 1}')), 'completed',
    'Should go running -> completed by complete_task');

-- pending -> running, claim and start at once (oldest and highest priority: first in claim order)
SELECT tests.make_task(role := 't04_transitions', priority := 100, created_at := '2000-01-01 00:00:00+00') AS h_id \gset
SELECT results_eq(
    $$SELECT id, status FROM claim_and_start_tasks('t04_transitions', 'w-h')$$,
    format($$VALUES (%s::bigint, 'running'::text)$$, :h_id),
    'Should go pending -> running by claim_and_start_tasks');

-- pending -> failed, by the claim that meets a spent attempt counter (in a role of its own, as the
-- claim then goes on to the next task; the counter is written directly: reaching it takes 2^31 - 1
-- claims)
INSERT INTO task_roles (role, description) VALUES ('t04_spent', 'pgTAP transitions: a spent attempt counter');
SELECT tests.make_task(role := 't04_spent') AS s_id \gset
UPDATE worker_tasks SET attempt = 2147483647 WHERE id = :s_id;
SELECT claim_task('t04_spent', 'w-s');
SELECT is((SELECT status FROM worker_tasks WHERE id = :s_id), 'failed',
    'Should go pending -> failed by a claim that meets a spent attempt counter');

-- claimed -> completed
SELECT is((SELECT c.status FROM tests.make_claimed_task(role := 't04_transitions') AS m,
                                complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS c),
    'completed',
    'Should go claimed -> completed by complete_task without start_task');

-- claimed -> failed
SELECT is((SELECT f.status FROM tests.make_claimed_task(role := 't04_transitions') AS m,
                                fail_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt), 'bad input', retryable := false) AS f),
    'failed',
    'Should go claimed -> failed by a permanent fail_task');

-- running -> failed; kept to be retried below (failed -> pending)
SELECT f.id AS b_id
FROM tests.make_claimed_task(role := 't04_transitions', started := true) AS m,
     fail_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt), 'store closed', retryable := false) AS f \gset
SELECT is((SELECT status FROM worker_tasks WHERE id = :b_id), 'failed',
    'Should go running -> failed by a permanent fail_task');

-- running -> pending (a retry: its backoff keeps it out of the claim order)
SELECT f.id AS c_id
FROM tests.make_claimed_task(role := 't04_transitions', started := true) AS m,
     fail_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt), 'HTTP 503') AS f \gset
SELECT is((SELECT status FROM worker_tasks WHERE id = :c_id), 'pending',
    'Should go running -> pending by a retryable fail_task');

-- claimed -> pending, then pending -> cancelled (which also takes it out of the claim order)
SELECT r.id AS d_id
FROM tests.make_claimed_task(role := 't04_transitions') AS m,
     release_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS r \gset
SELECT is((SELECT status FROM worker_tasks WHERE id = :d_id), 'pending',
    'Should go claimed -> pending by release_task');
SELECT is((SELECT status FROM cancel_task(:d_id)), 'cancelled',
    'Should go pending -> cancelled by cancel_task');

-- claimed -> cancelled
SELECT id AS e_id, worker_id AS e_worker, attempt AS e_attempt
FROM tests.make_claimed_task(role := 't04_transitions') \gset
SELECT cancel_requested_at AS e_cancel_requested_at FROM cancel_task(:e_id) \gset
SELECT is((SELECT status FROM release_task(:e_id, :'e_worker', :e_attempt, tests.claim_token(:e_id, :e_attempt))), 'cancelled',
    'Should go claimed -> cancelled when the worker releases a task whose cancel was requested');

-- running -> cancelled; kept to be retried below (cancelled -> pending)
SELECT id AS f_id, worker_id AS f_worker, attempt AS f_attempt
FROM tests.make_claimed_task(role := 't04_transitions', started := true) \gset
SELECT cancel_requested_at AS f_cancel_requested_at FROM cancel_task(:f_id) \gset
SELECT is((SELECT status FROM fail_task(:f_id, :'f_worker', :f_attempt, tests.claim_token(:f_id, :f_attempt), 'stopped on cancel')), 'cancelled',
    'Should go running -> cancelled when the worker fails a task whose cancel was requested');

-- claimed, for a direct UPDATE to failed further down
SELECT id AS g_id FROM tests.make_claimed_task(role := 't04_transitions') \gset

-- failed -> pending, cancelled -> pending (after every make_claimed_task: these are ready now)
SELECT is((SELECT status FROM retry_task(:b_id)), 'pending',
    'Should go failed -> pending by retry_task');
SELECT is((SELECT status FROM retry_task(:f_id)), 'pending',
    'Should go cancelled -> pending by retry_task');

/****************************************************************************/
-- What a legal transition implies

SELECT is(
    (SELECT jsonb_build_object('worker_id', worker_id, 'claimed_at', claimed_at, 'started_at', started_at,
                               'last_heartbeat_at', last_heartbeat_at, 'cancel_requested_at', cancel_requested_at,
                               'completed_at', completed_at)
     FROM worker_tasks WHERE id = :c_id),
    '{"worker_id": null, "claimed_at": null, "started_at": null, "last_heartbeat_at": null,
      "cancel_requested_at": null, "completed_at": null}'::jsonb,
    'Should clear the owner fields when a running task goes back to pending');

SELECT is(
    (SELECT jsonb_build_object('worker_id', worker_id, 'claimed_at', claimed_at, 'started_at', started_at,
                               'last_heartbeat_at', last_heartbeat_at, 'cancel_requested_at', cancel_requested_at,
                               'completed_at', completed_at)
     FROM worker_tasks WHERE id = :f_id),
    '{"worker_id": null, "claimed_at": null, "started_at": null, "last_heartbeat_at": null,
      "cancel_requested_at": null, "completed_at": null}'::jsonb,
    'Should clear the owner fields, cancel_requested_at and completed_at when a cancelled task is retried');

-- The trigger does it for any caller: a direct UPDATE of a running task with a cancel request,
-- which names none of these columns, still satisfies worker_tasks_pending_is_unowned.
SELECT cancel_requested_at AS running_cancel_requested_at FROM cancel_task(:running_id) \gset
SELECT lives_ok(
    format('UPDATE worker_tasks SET status = %L WHERE id = %s', 'pending', :running_id),
    'Should accept a direct UPDATE running -> pending');
SELECT is(
    (SELECT jsonb_build_object('worker_id', worker_id, 'claimed_at', claimed_at, 'started_at', started_at,
                               'last_heartbeat_at', last_heartbeat_at, 'cancel_requested_at', cancel_requested_at,
                               'completed_at', completed_at)
     FROM worker_tasks WHERE id = :running_id),
    '{"worker_id": null, "claimed_at": null, "started_at": null, "last_heartbeat_at": null,
      "cancel_requested_at": null, "completed_at": null}'::jsonb,
    'Should clear worker_id, claimed_at, started_at, last_heartbeat_at, cancel_requested_at and completed_at on a direct UPDATE to pending');

SELECT is(
    ARRAY(SELECT completed_at FROM worker_tasks
          WHERE id IN (:completed_id, :failed_id, :cancelled_id) ORDER BY id),
    ARRAY[now(), now(), now()],
    'Should stamp completed_at = now() on tasks completed, failed and cancelled through the API');

SELECT lives_ok(
    format('UPDATE worker_tasks SET status = %L WHERE id = %s', 'failed', :g_id),
    'Should accept a direct UPDATE claimed -> failed');
SELECT is((SELECT completed_at FROM worker_tasks WHERE id = :g_id), now(),
    'Should stamp completed_at = now() on a direct UPDATE to a finished status');

SELECT * FROM finish();
ROLLBACK;
