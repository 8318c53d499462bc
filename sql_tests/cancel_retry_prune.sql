-- cancel_retry_prune: the operator verbs. cancel_task stops a task (at once when pending, at
-- the next heartbeat when claimed or running); retry_task gives a failed or cancelled task a
-- fresh start; prune_tasks deletes finished tasks, oldest first, with their attempt history.
BEGIN;
SELECT plan(41);

-- One role per section, so that each claim takes exactly the task its section means.
INSERT INTO task_roles (role, description, max_retries) VALUES
    ('t06_cancel', 'pgTAP cancel_retry_prune: cancel_task', 3),
    ('t06_retry',  'pgTAP cancel_retry_prune: retry_task', 1),
    ('t06_prune',  'pgTAP cancel_retry_prune: prune_tasks', 3);

/****************************************************************************/
-- Structure

SELECT function_returns('cancel_task', ARRAY['bigint'], 'worker_tasks', 'cancel_task(bigint) should return a task row');
SELECT function_returns('retry_task', ARRAY['bigint'], 'worker_tasks', 'retry_task(bigint) should return a task row');
SELECT function_returns('prune_tasks', ARRAY['interval', 'integer'], 'integer',
    'prune_tasks(interval, integer) should return a count');

/****************************************************************************/
-- cancel_task

SELECT t.id AS pending_id FROM enqueue_task('t06_cancel') AS t \gset
SELECT is(
    (SELECT jsonb_build_object('status', status, 'completed_at', completed_at, 'cancel_requested_at', cancel_requested_at)
     FROM cancel_task(:pending_id)),
    jsonb_build_object('status', 'cancelled', 'completed_at', now(), 'cancel_requested_at', NULL),
    'Should cancel a pending task at once');

SELECT id AS claimed_id FROM tests.make_claimed_task(role := 't06_cancel') \gset
SELECT is(
    (SELECT jsonb_build_object('status', status, 'cancel_requested_at', cancel_requested_at, 'completed_at', completed_at)
     FROM cancel_task(:claimed_id)),
    jsonb_build_object('status', 'claimed', 'cancel_requested_at', now(), 'completed_at', NULL),
    'Should leave a claimed task claimed with cancel_requested_at = now()');

-- A first request made earlier: backdated, as now() does not move in this transaction.
UPDATE worker_tasks SET cancel_requested_at = now() - interval '5 minutes' WHERE id = :claimed_id;
SELECT is((SELECT cancel_requested_at FROM cancel_task(:claimed_id)), now() - interval '5 minutes',
    'Should keep the first cancel_requested_at when a claimed task is cancelled twice');
SELECT is((SELECT status FROM worker_tasks WHERE id = :claimed_id), 'claimed',
    'Should leave the twice-cancelled claimed task claimed');

SELECT id AS running_id FROM tests.make_claimed_task(role := 't06_cancel', started := true) \gset
SELECT is(
    (SELECT jsonb_build_object('status', status, 'cancel_requested_at', cancel_requested_at)
     FROM cancel_task(:running_id)),
    jsonb_build_object('status', 'running', 'cancel_requested_at', now()),
    'Should leave a running task running with cancel_requested_at = now()');

SELECT c.id AS completed_id
FROM tests.make_claimed_task(role := 't06_cancel') AS m, complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS c \gset
SELECT f.id AS failed_id
FROM tests.make_claimed_task(role := 't06_cancel') AS m,
     fail_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt), 'permanent', retryable := false) AS f \gset

SELECT throws_ok(format('SELECT cancel_task(%s)', :completed_id), '55000',
    format('task %s is completed and cannot be cancelled', :completed_id),
    'Should refuse to cancel a completed task');
SELECT throws_ok(format('SELECT cancel_task(%s)', :failed_id), '55000',
    format('task %s is failed and cannot be cancelled', :failed_id),
    'Should refuse to cancel a failed task');
SELECT throws_ok(format('SELECT cancel_task(%s)', :pending_id), '55000',
    format('task %s is cancelled and cannot be cancelled', :pending_id),
    'Should refuse to cancel a cancelled task');

SELECT id AS gone_id FROM enqueue_task('t06_cancel') \gset
DELETE FROM worker_tasks WHERE id = :gone_id;
SELECT throws_ok(format('SELECT cancel_task(%s)', :gone_id), 'P0002',
    format('task %s does not exist', :gone_id),
    'Should refuse to cancel a task that does not exist');
SELECT throws_ok('SELECT cancel_task(NULL)', '22004', 'task_id is required',
    'Should refuse to cancel without a task id');

/****************************************************************************/
-- retry_task

-- A task that failed for good after spending its one retry: attempts 1 (retried) and 2 (failed).
SELECT id AS rf_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't06_retry') \gset
SELECT status AS rf_status FROM fail_task(:rf_id, 'w1', 1, tests.claim_token(:rf_id, 1), 'first', retry_at := now()) \gset
SELECT attempt AS rf_attempt FROM claim_task('t06_retry', 'w2') \gset
SELECT is((SELECT jsonb_build_object('status', status, 'retry_count', retry_count)
           FROM fail_task(:rf_id, 'w2', :rf_attempt, tests.claim_token(:rf_id, :rf_attempt), 'second')),
    '{"status": "failed", "retry_count": 1}'::jsonb,
    'Should have a failed task with its retry spent to retry');

SELECT is(
    (SELECT jsonb_build_object('status', status, 'retry_count', retry_count, 'scheduled_for', scheduled_for,
                               'completed_at', completed_at, 'worker_id', worker_id)
     FROM retry_task(:rf_id)),
    jsonb_build_object('status', 'pending', 'retry_count', 0, 'scheduled_for', now(),
                       'completed_at', NULL, 'worker_id', NULL),
    'Should put a failed task back to pending now with retry_count 0');
SELECT results_eq(
    format('SELECT attempt, worker_id, outcome, error_message FROM worker_task_attempts WHERE task_id = %s ORDER BY attempt', :rf_id),
    $$VALUES (1, 'w1'::text, 'retried'::text, 'first'::text), (2, 'w2', 'failed', 'second')$$,
    'Should keep the attempt history of a retried failed task');
-- Out of the claim order again, for the make_claimed_task calls below.
SELECT status AS rf_status FROM cancel_task(:rf_id) \gset

-- A running task cancelled through its worker.
SELECT id AS rc_id FROM tests.make_claimed_task(worker_id := 'w1', role := 't06_retry', started := true) \gset
SELECT status AS rc_status FROM cancel_task(:rc_id) \gset
SELECT status AS rc_status FROM fail_task(:rc_id, 'w1', 1, tests.claim_token(:rc_id, 1), 'stopped on cancel') \gset
SELECT is(
    (SELECT jsonb_build_object('status', status, 'retry_count', retry_count, 'scheduled_for', scheduled_for,
                               'cancel_requested_at', cancel_requested_at, 'completed_at', completed_at)
     FROM retry_task(:rc_id)),
    jsonb_build_object('status', 'pending', 'retry_count', 0, 'scheduled_for', now(),
                       'cancel_requested_at', NULL, 'completed_at', NULL),
    'Should put a cancelled task back to pending now with retry_count 0');
SELECT results_eq(
    format('SELECT attempt, outcome FROM worker_task_attempts WHERE task_id = %s ORDER BY attempt', :rc_id),
    $$VALUES (1, 'cancelled'::text)$$,
    'Should keep the attempt history of a retried cancelled task');
SELECT status AS rc_status FROM cancel_task(:rc_id) \gset

SELECT id AS rp_id FROM enqueue_task('t06_retry', scheduled_for := now() + interval '1 day') \gset
SELECT id AS rcl_id FROM tests.make_claimed_task(role := 't06_retry') \gset
SELECT id AS rr_id FROM tests.make_claimed_task(role := 't06_retry', started := true) \gset
SELECT c.id AS rco_id
FROM tests.make_claimed_task(role := 't06_retry') AS m, complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS c \gset

SELECT throws_ok(format('SELECT retry_task(%s)', :rp_id), '55000',
    format('task %s is pending and cannot be retried', :rp_id),
    'Should refuse to retry a pending task');
SELECT throws_ok(format('SELECT retry_task(%s)', :rcl_id), '55000',
    format('task %s is claimed and cannot be retried', :rcl_id),
    'Should refuse to retry a claimed task');
SELECT throws_ok(format('SELECT retry_task(%s)', :rr_id), '55000',
    format('task %s is running and cannot be retried', :rr_id),
    'Should refuse to retry a running task');
SELECT throws_ok(format('SELECT retry_task(%s)', :rco_id), '55000',
    format('task %s is completed and cannot be retried', :rco_id),
    'Should refuse to retry a completed task');
SELECT throws_ok(format('SELECT retry_task(%s)', :gone_id), 'P0002',
    format('task %s does not exist', :gone_id),
    'Should refuse to retry a task that does not exist');
SELECT throws_ok('SELECT retry_task(NULL)', '22004', 'task_id is required',
    'Should refuse to retry without a task id');

-- A failed task whose dedupe key another active task now holds.
SELECT id AS rd_id FROM enqueue_task('t06_retry', priority := 100, dedupe_key := 't06-dedupe') \gset
SELECT attempt AS rd_attempt FROM claim_task('t06_retry', 'w1') \gset
SELECT status AS rd_status FROM fail_task(:rd_id, 'w1', :rd_attempt, tests.claim_token(:rd_id, :rd_attempt), 'permanent', retryable := false) \gset
SELECT id AS rd_holder_id FROM enqueue_task('t06_retry', dedupe_key := 't06-dedupe') \gset
SELECT isnt(:rd_holder_id::bigint, :rd_id::bigint, 'Should enqueue a new task with the key of the failed one');
SELECT to_jsonb(t) AS rd_row FROM worker_tasks t WHERE t.id = :rd_id \gset
SELECT throws_ok(format('SELECT retry_task(%s)', :rd_id), '23505',
    format('task %s cannot be retried: task %s with dedupe key %L is active', :rd_id, :rd_holder_id, 't06-dedupe'),
    'Should refuse to retry a failed task whose dedupe key an active task holds');
SELECT is((SELECT to_jsonb(t) FROM worker_tasks t WHERE t.id = :rd_id), :'rd_row'::jsonb,
    'Should leave the failed task unchanged after the refused retry');

/****************************************************************************/
-- prune_tasks

-- Finished long ago: completed 4 days, failed 3 days, cancelled (while running) 2 days.
SELECT c.id AS old_completed_id
FROM tests.make_claimed_task(role := 't06_prune') AS m, complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS c \gset
SELECT f.id AS old_failed_id
FROM tests.make_claimed_task(role := 't06_prune') AS m,
     fail_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt), 'permanent', retryable := false) AS f \gset
SELECT id AS old_cancelled_id FROM tests.make_claimed_task(role := 't06_prune', started := true) \gset
SELECT status AS s FROM cancel_task(:old_cancelled_id) \gset
SELECT status AS s FROM fail_task(:old_cancelled_id, 'w1', 1, tests.claim_token(:old_cancelled_id, 1), 'stopped on cancel') \gset
SELECT tests.age_completion(:old_completed_id, interval '4 days') AS aged \gset
SELECT tests.age_completion(:old_failed_id, interval '3 days') AS aged \gset
SELECT tests.age_completion(:old_cancelled_id, interval '2 days') AS aged \gset

-- Finished recently: completed an hour ago, failed just now (with an attempt row).
SELECT c.id AS new_completed_id
FROM tests.make_claimed_task(role := 't06_prune') AS m, complete_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt)) AS c \gset
SELECT tests.age_completion(:new_completed_id, interval '1 hour') AS aged \gset
SELECT f.id AS new_failed_id
FROM tests.make_claimed_task(role := 't06_prune') AS m,
     fail_task(m.id, m.worker_id, m.attempt, tests.claim_token(m.id, m.attempt), 'permanent', retryable := false) AS f \gset

-- Active, and old by every other clock: pending since 2000, claimed and running with old heartbeats.
SELECT tests.make_task(role := 't06_prune', scheduled_for := now() + interval '1 day',
                       created_at := '2000-01-01 00:00:00+00') AS old_pending_id \gset
SELECT id AS old_claimed_id FROM tests.make_claimed_task(role := 't06_prune') \gset
SELECT id AS old_running_id FROM tests.make_claimed_task(role := 't06_prune', started := true) \gset
SELECT tests.age_heartbeat(:old_claimed_id, interval '5 days') AS aged \gset
SELECT tests.age_heartbeat(:old_running_id, interval '5 days') AS aged \gset

SELECT is(
    (SELECT count(*) FROM worker_task_attempts WHERE task_id IN (:old_failed_id, :old_cancelled_id)),
    2::bigint,
    'Should have attempt rows for the old failed and cancelled tasks before pruning');

SELECT throws_ok($$SELECT prune_tasks(interval '-1 day')$$, '22023',
    'older_than must be a non-negative interval, not -1 days',
    'Should refuse a negative interval');
SELECT throws_ok($$SELECT prune_tasks(NULL)$$, '22023',
    'older_than must be a non-negative interval, not NULL',
    'Should refuse a NULL interval');
SELECT throws_ok($$SELECT prune_tasks(interval '1 day', max_tasks := 0)$$, '22023',
    'max_tasks must be positive, not 0',
    'Should refuse max_tasks 0');
SELECT throws_ok($$SELECT prune_tasks(interval '1 day', max_tasks := -1)$$, '22023',
    'max_tasks must be positive, not -1',
    'Should refuse a negative max_tasks');

SELECT is(prune_tasks(interval '1 day', max_tasks := 2), 2, 'Should prune max_tasks tasks and return the count');
SELECT set_eq(
    format('SELECT id FROM worker_tasks WHERE id IN (%s, %s, %s)', :old_completed_id, :old_failed_id, :old_cancelled_id),
    ARRAY[:old_cancelled_id::bigint],
    'Should prune the oldest finished tasks first');

SELECT is(prune_tasks(interval '1 day'), 1, 'Should prune the remaining old finished task and return the count');
SELECT set_eq(
    format('SELECT id FROM worker_tasks WHERE id IN (%s, %s, %s, %s, %s, %s, %s, %s)',
           :old_completed_id, :old_failed_id, :old_cancelled_id, :new_completed_id, :new_failed_id,
           :old_pending_id, :old_claimed_id, :old_running_id),
    ARRAY[:new_completed_id::bigint, :new_failed_id, :old_pending_id, :old_claimed_id, :old_running_id],
    'Should keep recent finished tasks and every pending, claimed and running task');
SELECT is(
    (SELECT count(*) FROM worker_task_attempts WHERE task_id IN (:old_failed_id, :old_cancelled_id)),
    0::bigint,
    'Should delete the attempt rows of pruned tasks with them');
SELECT is((SELECT count(*) FROM worker_task_attempts WHERE task_id = :new_failed_id), 1::bigint,
    'Should keep the attempt rows of tasks not pruned');
SELECT is(prune_tasks(interval '1 day'), 0, 'Should return 0 when nothing is old enough');

SELECT is(prune_tasks(interval '30 minutes'), 1, 'Should prune by the interval given');
SELECT set_eq(
    format('SELECT id FROM worker_tasks WHERE id IN (%s, %s)', :new_completed_id, :new_failed_id),
    ARRAY[:new_failed_id::bigint],
    'Should prune a task finished an hour ago with a 30-minute interval, and keep one finished now');

SELECT * FROM finish();
ROLLBACK;
