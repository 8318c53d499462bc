-- recover_stale: recover_stale_tasks takes back claimed and running tasks whose worker went
-- silent: to pending with a retry spent, to failed when none is left, to cancelled when a cancel
-- was requested; never left claimed or running. It returns how many it recovered.
BEGIN;
SELECT plan(27);

-- Roles of our own: claim order sees only this file's tasks, and thresholds are known.
-- t07_spent keeps later claims away from the tasks t07_stale put back to pending.
-- t07_fast and t07_slow differ only in stale_threshold, for recover_stale_tasks() without argument.
INSERT INTO task_roles (role, description, stale_threshold, max_retries) VALUES
    ('t07_stale', 'pgTAP recover_stale', '10 minutes', 3),
    ('t07_spent', 'pgTAP recover_stale: retries spent, cancel requested', '10 minutes', 3),
    ('t07_fast',  'pgTAP recover_stale: short stale_threshold', '1 minute', 3),
    ('t07_slow',  'pgTAP recover_stale: long stale_threshold', '1 hour', 3);

/****************************************************************************/
-- Structure

SELECT function_returns('recover_stale_tasks', ARRAY['integer'], 'integer',
    'recover_stale_tasks(integer) should return a count');

/****************************************************************************/
-- Bad thresholds

SELECT throws_ok($$SELECT recover_stale_tasks(0)$$, '22023', 'threshold_minutes must be positive, not 0',
    'Should refuse a threshold of 0 minutes');
SELECT throws_ok($$SELECT recover_stale_tasks(-5)$$, '22023', 'threshold_minutes must be positive, not -5',
    'Should refuse a negative threshold');

/****************************************************************************/
-- Without an argument: each role's stale_threshold (run first, while no other task is active)

SELECT id AS fast_id FROM tests.make_claimed_task(role := 't07_fast') \gset
SELECT id AS slow_id FROM tests.make_claimed_task(role := 't07_slow') \gset
SELECT tests.age_heartbeat(:fast_id, interval '5 minutes') AS aged \gset
SELECT tests.age_heartbeat(:slow_id, interval '5 minutes') AS aged \gset

SELECT is(recover_stale_tasks(), 1, 'Should recover by each role''s stale_threshold when given no threshold');
SELECT is(
    ARRAY(SELECT status FROM worker_tasks WHERE id IN (:fast_id, :slow_id) ORDER BY id = :slow_id),
    ARRAY['pending', 'claimed'],
    'Should recover the task silent past its role''s 1 minute, and keep the one within its role''s 1 hour');

/****************************************************************************/
-- recover_stale_tasks(10): stale claimed and running tasks go back to pending

SELECT id AS claimed_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't07_stale') \gset
SELECT id AS running_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't07_stale', started := true) \gset
SELECT id AS fresh_id FROM tests.make_claimed_task(worker_id := 'w2', role := 't07_stale', started := true) \gset
SELECT id AS edge_id FROM tests.make_claimed_task(worker_id := 'w3', role := 't07_stale') \gset
SELECT tests.age_heartbeat(:claimed_id, interval '11 minutes') AS aged \gset
SELECT tests.age_heartbeat(:running_id, interval '15 minutes') AS aged \gset
SELECT tests.age_heartbeat(:fresh_id, interval '9 minutes') AS aged \gset
SELECT tests.age_heartbeat(:edge_id, interval '10 minutes') AS aged \gset

-- Tasks it must never touch: pending (ready since 2000), completed and failed with old heartbeats.
SELECT tests.make_task(role := 't07_stale', scheduled_for := '2000-01-01 00:00:00+00',
                       created_at := '2000-01-01 00:00:00+00') AS pending_id \gset
SELECT c.id AS completed_id
FROM tests.make_claimed_task(worker_id := 'w4', role := 't07_stale') AS m,
     complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS c \gset
SELECT f.id AS failed_id
FROM tests.make_claimed_task(worker_id := 'w4', role := 't07_stale') AS m,
     fail_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt), 'permanent', retryable := false) AS f \gset
SELECT tests.age_heartbeat(:completed_id, interval '1 day') AS aged \gset
SELECT tests.age_heartbeat(:failed_id, interval '1 day') AS aged \gset

CREATE TEMP TABLE untouched AS
SELECT t.id, to_jsonb(t) AS row_before FROM worker_tasks t
WHERE t.id IN (:slow_id, :fresh_id, :edge_id, :pending_id, :completed_id, :failed_id);

SELECT is(recover_stale_tasks(10), 2, 'Should return the number of tasks it recovered');

SELECT is(
    (SELECT jsonb_build_object('status', status, 'retry_count', retry_count, 'scheduled_for', scheduled_for,
                               'worker_id', worker_id, 'attempt', attempt, 'claimed_at', claimed_at,
                               'last_heartbeat_at', last_heartbeat_at)
     FROM worker_tasks WHERE id = :claimed_id),
    jsonb_build_object('status', 'pending', 'retry_count', 1, 'scheduled_for', now(),
                       'worker_id', NULL, 'attempt', 1, 'claimed_at', NULL, 'last_heartbeat_at', NULL),
    'Should put a stale claimed task back to pending, ready now, with retry_count + 1');
SELECT is(
    (SELECT jsonb_build_object('status', status, 'retry_count', retry_count, 'scheduled_for', scheduled_for,
                               'worker_id', worker_id, 'started_at', started_at)
     FROM worker_tasks WHERE id = :running_id),
    jsonb_build_object('status', 'pending', 'retry_count', 1, 'scheduled_for', now(),
                       'worker_id', NULL, 'started_at', NULL),
    'Should put a stale running task back to pending, ready now, with retry_count + 1');
SELECT is((SELECT error_message FROM worker_tasks WHERE id = :running_id),
    format('stale: worker w1 sent no heartbeat since %s', now() - interval '15 minutes'),
    'Should say in error_message which worker went silent and since when');
SELECT ok((SELECT bool_and(error_message LIKE 'stale: worker w1 %') FROM worker_tasks
           WHERE id IN (:claimed_id, :running_id)),
    'Should start the error_message of each recovered task with ''stale: worker w1''');
SELECT results_eq(
    format($$SELECT task_id, attempt, worker_id, outcome, ended_at, last_heartbeat_at, error_message LIKE 'stale: worker w1 %%'
             FROM worker_task_attempts WHERE task_id IN (%s, %s) ORDER BY task_id$$, :claimed_id, :running_id),
    format($$VALUES (%s::bigint, 1, 'w1'::text, 'retried'::text, now(), now() - interval '11 minutes', true),
                    (%s, 1, 'w1', 'retried', now(), now() - interval '15 minutes', true)$$, :claimed_id, :running_id),
    'Should record each recovered attempt as retried, with its worker, last heartbeat and error');

SELECT is(
    (SELECT to_jsonb(t) FROM worker_tasks t WHERE t.id = u.id), u.row_before,
    format('Should leave untouched the %s', w.what))
FROM untouched u
JOIN (VALUES (:slow_id::bigint, 'claimed task of the 1-hour role silent 5 minutes', 1),
             (:fresh_id, 'running task silent 9 minutes', 2),
             (:edge_id, 'claimed task silent exactly 10 minutes', 3),
             (:pending_id, 'pending task', 4),
             (:completed_id, 'completed task with a day-old heartbeat', 5),
             (:failed_id, 'failed task with a day-old heartbeat', 6)) AS w(id, what, ord) ON w.id = u.id
ORDER BY w.ord;

SELECT is(recover_stale_tasks(10), 0, 'Should recover nothing the second time');
SELECT is(
    ARRAY(SELECT retry_count FROM worker_tasks WHERE id IN (:claimed_id, :running_id) ORDER BY id),
    ARRAY[1, 1],
    'Should spend no further retry on a second run');

/****************************************************************************/
-- Retries spent: failed, never left claimed

SELECT id AS zero_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't07_spent', max_retries := 0) \gset
SELECT tests.age_heartbeat(:zero_id, interval '11 minutes') AS aged \gset

-- retry_count = max_retries = 1: one failure retried at once, then claimed again.
SELECT id AS spent_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't07_spent', max_retries := 1) \gset
SELECT status AS s FROM fail_task(:spent_id, 'w1', 1, tests.claim_token(:spent_id, 1), 'first', retry_at := now()) \gset
SELECT attempt AS spent_attempt FROM claim_task('t07_spent', 'w2') \gset
SELECT is((SELECT jsonb_build_object('status', status, 'retry_count', retry_count, 'max_retries', max_retries,
                                     'attempt', attempt)
           FROM worker_tasks WHERE id = :spent_id),
    '{"status": "claimed", "retry_count": 1, "max_retries": 1, "attempt": 2}'::jsonb,
    'Should have a claimed task with retry_count = max_retries');
SELECT tests.age_heartbeat(:spent_id, interval '11 minutes') AS aged \gset

-- A stale task whose cancel was requested.
SELECT id AS cancel_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't07_spent', started := true) \gset
SELECT cancel_requested_at AS cancel_requested_at FROM cancel_task(:cancel_id) \gset
SELECT tests.age_heartbeat(:cancel_id, interval '11 minutes') AS aged \gset

SELECT is(recover_stale_tasks(10), 3, 'Should recover the three stale tasks');

SELECT is(
    (SELECT jsonb_build_object('status', status, 'retry_count', retry_count, 'completed_at', completed_at)
     FROM worker_tasks WHERE id = :zero_id),
    jsonb_build_object('status', 'failed', 'retry_count', 0, 'completed_at', now()),
    'Should fail a stale task with max_retries 0');
SELECT is(
    (SELECT jsonb_build_object('status', status, 'retry_count', retry_count, 'completed_at', completed_at)
     FROM worker_tasks WHERE id = :spent_id),
    jsonb_build_object('status', 'failed', 'retry_count', 1, 'completed_at', now()),
    'Should fail a stale task whose retry_count has reached max_retries');
SELECT results_eq(
    format($$SELECT task_id, attempt, worker_id, outcome FROM worker_task_attempts
             WHERE task_id IN (%s, %s) ORDER BY task_id, attempt$$, :zero_id, :spent_id),
    format($$VALUES (%s::bigint, 1, 'w1'::text, 'failed'::text), (%s, 1, 'w1', 'retried'), (%s, 2, 'w2', 'failed')$$,
           :zero_id, :spent_id, :spent_id),
    'Should record the attempt of a stale task with no retry left as failed');
SELECT is(
    (SELECT jsonb_build_object('status', status, 'retry_count', retry_count, 'completed_at', completed_at)
     FROM worker_tasks WHERE id = :cancel_id),
    jsonb_build_object('status', 'cancelled', 'retry_count', 0, 'completed_at', now()),
    'Should cancel a stale task whose cancel was requested, spending no retry');
SELECT results_eq(
    format('SELECT attempt, outcome FROM worker_task_attempts WHERE task_id = %s', :cancel_id),
    $$VALUES (1, 'cancelled'::text)$$,
    'Should record the attempt of a stale task with a cancel request as cancelled');
SELECT is(
    (SELECT count(*) FROM worker_tasks
     WHERE id IN (:zero_id, :spent_id, :cancel_id, :claimed_id, :running_id, :fast_id)
       AND status IN ('claimed', 'running')),
    0::bigint,
    'Should leave no stale task claimed or running');

SELECT * FROM finish();
ROLLBACK;
